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
const { readdirSync, readFileSync } = require('fs');

const VALUE_MAX = 64 * 1024;
// Ours, taken before any cell can replace them.
const stringify = JSON.stringify, parse = JSON.parse, inspect = util.inspect;
const kill = process.kill.bind(process), me = process.pid;
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

async function run(n, code, timeout) {
	running = n;
	const before = processes();
	let status = 'ok', value = null;
	try {
		if (early === n)
			throw Object.assign(new Error("interrupted: the cell's timeout came before it started"), { sbxInterrupt: true });
		const script = new vm.Script(code, { filename: `<cell ${n}>` });
		let v = script.runInThisContext({ timeout: Math.max(1, timeout | 0), breakOnSigint: true });
		if (v && typeof v.then === 'function') {
			v = await Promise.race([v, new Promise((_, reject) => {
				interrupt = () => reject(Object.assign(new Error('interrupted: the cell timed out'), { sbxInterrupt: true }));
			})]);
		}
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
