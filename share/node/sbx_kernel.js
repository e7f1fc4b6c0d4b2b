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
// awaited until it settles or the interrupt comes.  A kernel that does not
// answer is killed by sbx-run.
'use strict';
const net = require('net');
const util = require('util');
const vm = require('vm');

const VALUE_MAX = 64 * 1024;
const chan = new net.Socket({ fd: 0, readable: true, writable: true });
let queue = [], busy = false, interrupt = null, running = null;

globalThis.require = require;
globalThis.module = module;

function send(msg) {
	chan.write(JSON.stringify(msg) + '\n');
}

function show(v) {
	const text = util.inspect(v, { depth: 4 });
	return text.length <= VALUE_MAX ? text : text.slice(0, VALUE_MAX) + '…';
}

// A cell's stack ends where the kernel's begins.
function report(e) {
	let text = e && e.stack ? e.stack : 'Uncaught ' + show(e);
	const lines = text.split('\n'), cut = lines.findIndex((l) => /\(node:vm:|sbx_kernel\.js:/.test(l));
	if (cut > 0)
		text = lines.slice(0, cut).join('\n');
	process.stderr.write(text + '\n');
}

async function run(n, code, timeout) {
	running = n;
	let status = 'ok', value = null;
	try {
		const script = new vm.Script(code, { filename: `<cell ${n}>` });
		let v = script.runInThisContext({ timeout: Math.max(1, timeout | 0), breakOnSigint: true });
		if (v && typeof v.then === 'function') {
			v = await Promise.race([v, new Promise((_, reject) => {
				interrupt = () => reject(new Error('interrupted: the cell timed out'));
			})]);
		}
		if (v !== undefined)
			value = show(v);
	} catch (e) {
		status = 'error';
		report(e);
	}
	interrupt = null;
	running = null;
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
			msg = JSON.parse(line);
		} catch (e) {
			process.exit(70);
		}
		if ('interrupt' in msg) {
			if (msg.interrupt === running && interrupt)
				interrupt();
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
