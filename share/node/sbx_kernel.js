// sbx: the JavaScript kernel behind run_cell (lib/run/cell.h has the
// protocol).
//
// One Node.js process runs a session's cells as scripts in its own global
// context, so what a cell declares with var or function, or assigns to
// globalThis, the next one sees (let and const too, but not twice).  The
// requests come on stdin, a socket to sbx-run, one JSON object a line; each
// cell is answered with one line.  Node runs one thing at a time, so a
// busy cell cannot read an interrupt: its synchronous part runs with the
// cell's timeout (vm's own), and a cell whose value is a promise is
// awaited until it settles or the interrupt comes.  A cell may await at
// its top level, as in Node's REPL (awaiting(), below).  A kernel that
// does not answer is killed by sbx-run.
'use strict';
const net = require('net');
const util = require('util');
const vm = require('vm');
const { readdirSync, readFileSync } = require('fs');

const VALUE_MAX = 64 * 1024;
// Ours, taken before any cell can replace them.
const stringify = JSON.stringify, parse = JSON.parse, inspect = util.inspect;
const kill = process.kill.bind(process), me = process.pid, binding = process.binding;
const chan = new net.Socket({ fd: 0, readable: true, writable: true });
let queue = [], busy = false, interrupt = null, running = null, done = 0, early = null;

globalThis.require = require;
globalThis.module = module;

function send(msg) {
	chan.write(stringify(msg) + '\n');
}

function show(v) {
	let text = String(inspect(v, { depth: 4 }));
	if (text.length > VALUE_MAX)
		text = text.slice(0, VALUE_MAX) + '…';
	// A pair cut in two, or a lone surrogate, is no UTF-8.
	return typeof text.toWellFormed === 'function' ? text.toWellFormed() : text.replace(/[\ud800-\udfff]/g, '\ufffd');
}

// A cell's stack ends where the kernel's begins.
function report(e) {
	let text = e && e.stack ? e.stack : 'Uncaught ' + show(e);
	const lines = text.split('\n'), cut = lines.findIndex((l) => /\(node:vm:|sbx_kernel\.js:/.test(l));
	if (cut > 0)
		text = lines.slice(0, cut).join('\n');
	process.stderr.write(text + '\n');
}

// The sandbox's processes but its init (pid 1) and this kernel, each as
// "pid start-time": a cell's children, and what those left, however
// detached (setsid and a double fork make an orphan of init's).  The start
// time tells a reused pid apart.
function processes() {
	const out = new Set();
	for (const name of readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(name) || name === '1' || Number(name) === me)
			continue;
		try {
			const st = readFileSync(`/proc/${name}/stat`, 'latin1');
			out.add(name + ' ' + st.slice(st.lastIndexOf(')') + 2).split(' ')[19]);
		} catch (e) {
			// gone meanwhile
		}
	}
	return out;
}

// Kill what an interrupted cell started (not what earlier cells left
// running on purpose), again while any of it is still forking.
function reap(before) {
	for (let i = 0; i < 50; i++) {
		const fresh = [...processes()].filter((p) => !before.has(p));
		if (!fresh.length)
			return;
		for (const p of fresh) {
			try {
				kill(Number(p.split(' ')[0]), 'SIGKILL');
			} catch (e) {
				// gone meanwhile
			}
		}
	}
}

// ---- top-level await --------------------------------------------------------
//
// A cell that awaits at its top level is no script: V8 refuses it.  Such a
// cell runs as the body of an async function, as Node's REPL runs such a
// line, rewritten so that it means what it would as a script:
//  - its top-level declarations are the context's, for later cells: each
//    name is declared before the function (var and function as var; let,
//    const and class as let), and the declaration inside becomes an
//    assignment to it (`const {a, b} = o` is `void ({a, b} = o)`, `class
//    C {}` is `C = class C {};`); a function declaration stays where it is
//    (hoisted, callable before it) and is assigned to the context's name
//    first thing;
//  - a var in a block or loop (not in a function) is the context's too,
//    as in a script: `for (var i of xs)` is `for (i of xs)`;
//  - the last statement, if an expression, is the cell's value.
// What it does not do as a script would: a const of such a cell is a let
// for later cells (it can be assigned); a let or class is undefined, not
// in its temporal dead zone, before its declaration runs; the value is
// only that of a last statement that is an expression (not a loop's or an
// if's); a var declared by a direct eval(), or a function declared in a
// block, stays the function's; an assignment in the cell to a function it
// declares changes only the cell's own.  Columns on the first line move
// by the declarations put before it; lines do not move.
//
// The parser is Node's own acorn (its REPL's), which Node does not export:
// with --expose-internals it can be required; else its source is Node's
// (process.binding('natives')); else a public acorn (Debian's nodejs has
// one, or a session may install it).  Without one, such a cell is the
// SyntaxError V8 gave.
const ACORN = 'internal/deps/acorn/acorn/dist/acorn';
let parser;

function acorn() {
	if (parser !== undefined)
		return parser;
	parser = null;
	const found = [
		() => require(ACORN),
		() => {
			// (process.binding is deprecated: its warning, where Node
			// gives one, would land on the cell's stderr)
			const quiet = process.noDeprecation;
			process.noDeprecation = true;
			try {
				const m = { exports: {} };
				vm.compileFunction(binding.call(process, 'natives')[ACORN], ['exports', 'module'], { filename: 'acorn.js' })(m.exports, m);
				return m.exports;
			} finally {
				process.noDeprecation = quiet;
			}
		},
		() => require('acorn'),
	];
	for (const f of found) {
		try {
			const a = f();
			if (a && typeof a.parse === 'function')
				return (parser = a);
		} catch (e) {
			// not this one
		}
	}
	return null;
}

// The names a declaration's pattern binds.
function bound(p, out) {
	if (!p)
		return out;
	switch (p.type) {
	case 'Identifier': out.push(p.name); break;
	case 'ObjectPattern': for (const q of p.properties) bound(q.type === 'RestElement' ? q.argument : q.value, out); break;
	case 'ArrayPattern': for (const q of p.elements) bound(q, out); break;
	case 'AssignmentPattern': bound(p.left, out); break;
	case 'RestElement': bound(p.argument, out); break;
	}
	return out;
}

// The code as an async function's body (the text of a script that runs
// it, whose value is a promise of [value], or of undefined for none), or
// null when it does not parse as that either.
function awaiting(code) {
	const a = acorn();
	let ast;
	try {
		ast = a && a.parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true });
	} catch (e) {
		return null;
	}
	if (!ast)
		return null;
	const vars = [], lets = [], funcs = [], edits = [];
	const text = (node) => code.slice(node.start, node.end);
	// A declaration as assignments, in place: `var a = 1, b` is `void (a = 1, void 0)`.
	const assign = (d) => {
		edits.push([d.start, d.start + d.kind.length, 'void (']);
		for (const x of d.declarations)
			if (!x.init)
				edits.push([x.start, x.end, 'void 0']);
		const end = d.declarations[d.declarations.length - 1].end;
		edits.push([end, end, ')']);
		(d.kind === 'var' ? vars : lets).push(...d.declarations.flatMap((x) => bound(x.id, [])));
	};
	// The vars below the top level, but not in a function or a class.
	const nested = (node) => {
		if (!node || typeof node.type !== 'string' || /Function|^Class|StaticBlock/.test(node.type))
			return;
		if ((node.type === 'ForInStatement' || node.type === 'ForOfStatement') && node.left.type === 'VariableDeclaration' &&
		    node.left.kind === 'var') {
			const d = node.left;
			edits.push([d.start, d.declarations[0].start, '']);
			vars.push(...bound(d.declarations[0].id, []));
			nested(node.right);
			nested(node.body);
			return;
		}
		if (node.type === 'VariableDeclaration' && node.kind === 'var') {
			assign(node);
			return;
		}
		for (const key of Object.keys(node)) {
			const v = node[key];
			if (Array.isArray(v))
				v.forEach(nested);
			else if (v && typeof v.type === 'string')
				nested(v);
		}
	};
	const body = ast.body;
	let first = 0; // where the functions are assigned: after the directives
	while (first < body.length && body[first].directive !== undefined)
		first++;
	body.forEach((st, i) => {
		if (st.type === 'VariableDeclaration' && (st.kind === 'var' || st.kind === 'let' || st.kind === 'const')) {
			assign(st);
		} else if (st.type === 'FunctionDeclaration') {
			funcs.push(st.id.name);
		} else if (st.type === 'ClassDeclaration') {
			lets.push(st.id.name);
			edits.push([st.start, st.start, st.id.name + ' = ']);
			edits.push([st.end, st.end, ';']);
		} else if (i === body.length - 1 && st.type === 'ExpressionStatement') {
			edits.push([st.start, st.end, 'return [(' + text(st.expression) + ')];']);
		} else {
			nested(st);
		}
	});
	if (funcs.length) {
		const at = first ? body[first - 1].end : 0;
		edits.push([at, at, funcs.map((f) => `this.${f} = ${f};`).join(' ')]);
	}
	// From the end, so that each edit's offsets still hold.
	let out = code;
	edits.sort((x, y) => y[0] - x[0] || y[1] - x[1]);
	for (const [from, to, by] of edits)
		out = out.slice(0, from) + by + out.slice(to);
	const uniq = (xs) => [...new Set(xs)].join(', ');
	const before = (vars.length + funcs.length ? `var ${uniq([...vars, ...funcs])}; ` : '') + (lets.length ? `let ${uniq(lets)}; ` : '');
	return before + '(async () => {' + out + '\n})()';
}

// A promise awaited until it settles or the cell's interrupt comes.
function settle(p) {
	return Promise.race([p, new Promise((_, reject) => {
		interrupt = () => reject(Object.assign(new Error('interrupted: the cell timed out'), { sbxInterrupt: true }));
	})]);
}

async function run(n, code, timeout) {
	running = n;
	const before = processes();
	let status = 'ok', value = null;
	try {
		if (early === n)
			throw Object.assign(new Error("interrupted: the cell's timeout came before it started"), { sbxInterrupt: true });
		const filename = `<cell ${n}>`;
		let script, wrapped = null;
		try {
			script = new vm.Script(code, { filename });
		} catch (e) {
			// Awaits at its top level?  Else (or if that does not compile
			// either) the error is V8's, about the cell as written.
			wrapped = e && e.name === 'SyntaxError' && /\bawait\b/.test(code) ? awaiting(code) : null;
			try {
				script = wrapped !== null && new vm.Script(wrapped, { filename });
			} catch (e2) {
				script = null;
			}
			if (!script)
				throw e;
		}
		let v = script.runInThisContext({ timeout: Math.max(1, timeout | 0), breakOnSigint: true });
		if (wrapped !== null) {
			v = await settle(v);
			v = v === undefined ? undefined : v[0];
		}
		if (v && typeof v.then === 'function')
			v = await settle(v);
		if (v !== undefined)
			value = show(v);
	} catch (e) {
		// vm's timeout, or the interrupt while a promise was awaited
		status = e && (e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT' || e.sbxInterrupt) ? 'interrupted' : 'error';
		report(e);
	}
	interrupt = null;
	if (status === 'interrupted')
		reap(before);
	running = null;
	done = n;
	send({ cell: n, status, value });
}

async function pump() {
	if (busy)
		return;
	busy = true;
	while (queue.length) {
		const msg = queue.shift();
		if (!Number.isInteger(msg.cell) || typeof msg.code !== 'string')
			process.exit(70);
		await run(msg.cell, msg.code, msg.timeout_ms);
	}
	busy = false;
}

let buf = '';
chan.setEncoding('utf8');
chan.on('data', (d) => {
	buf += d;
	let i;
	while ((i = buf.indexOf('\n')) >= 0) {
		const line = buf.slice(0, i);
		buf = buf.slice(i + 1);
		let msg;
		try {
			msg = parse(line);
		} catch (e) {
			process.exit(70);
		}
		if ('interrupt' in msg) {
			if (msg.interrupt === running && interrupt)
				interrupt();
			else if (msg.interrupt !== running && msg.interrupt > done)
				early = msg.interrupt;
		} else {
			queue.push(msg);
			pump();
		}
	}
});
chan.on('end', () => process.exit(0));
chan.on('error', () => process.exit(0));
// A promise a cell left behind that fails later is that cell's business,
// reported where it lands, never the kernel's end.
process.on('unhandledRejection', report);
process.on('uncaughtException', report);
// Started: an interrupt from now on is a cell's, not a slow start's.
send({ ready: true });
