const n: number = "not a number";
console.log(n);
