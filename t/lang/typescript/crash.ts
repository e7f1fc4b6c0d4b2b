function f(): never {
	throw new Error("boom");
}
f();
