#!/usr/bin/env node
// The tokens a model reads of sbx-mcp's run results (part of make bench):
// typical results of run_code, run_cell and a judged run, each called once
// through bin/sbx-mcp over stdio (raw JSON-RPC), counted with o200k_base
// (gpt-tokenizer, pinned in bench/tokens: make bench-tokens) two ways side
// by side:
//
//   before  what the server used to answer: one text block that was the
//           record as JSON (JSON.stringify(structuredContent)) and the same
//           record as structuredContent.  A client that reads the content
//           or the structuredContent read it once; one that reads both
//           read it twice.  It is rebuilt from this server's record with
//           the fields the old one kept (no stdout_bytes, stderr_bytes,
//           limits_enforced, limits_missing, kernel_alive, artifact uri).
//   after   the text block a model reads now (content[0].text and any other
//           text block), and the structuredContent as JSON, which a client
//           that shows structuredContent gets ([mcp] structured = "always";
//           "auto" leaves it out for Claude Code and VS Code).
//
// Images are not text: their count and bytes are reported apart.
//
//   bench/mcp_tokens.mjs [--dump DIR]   (DIR: each case's texts, to read)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const TOKENIZER = path.join(ROOT, 'bench/tokens/node_modules/gpt-tokenizer/esm/encoding/o200k_base.js');
const PKG = path.join(ROOT, 'bench/tokens/node_modules/gpt-tokenizer/package.json');
if (!fs.existsSync(TOKENIZER)) {
	console.error(`bench/mcp_tokens.mjs: no ${path.relative(ROOT, TOKENIZER)}: make bench-tokens installs it`);
	process.exit(1);
}
const { countTokens } = await import(pathToFileURL(TOKENIZER).href);
const tokVersion = JSON.parse(fs.readFileSync(PKG, 'utf8')).version;
// Program output may hold "<|endoftext|>": text to count, not a special token.
const tokens = (s) => countTokens(s, { disallowedSpecial: new Set() });

const dumpAt = process.argv.indexOf('--dump');
const dump = dumpAt > 0 ? process.argv[dumpAt + 1] : null;
if (dump) fs.mkdirSync(dump, { recursive: true });

// The shipped configuration ($SBX_CONF, else etc/sandbox.conf) with its
// state and history in a temporary directory (bench/benchconf.py's way).
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-bench-tokens.'));
const conf = path.join(tmp, 'sandbox.conf');
const src = process.env.SBX_CONF || path.join(ROOT, 'etc/sandbox.conf');
fs.writeFileSync(conf, fs.readFileSync(src, 'utf8').split('\n').map((l) =>
	l.startsWith('state_dir') ? `state_dir = "${tmp}/var"` : l.startsWith('history ') ? `history = "${tmp}/var/history.db"` : l).join('\n'));

const server = spawn(path.join(ROOT, 'bin/sbx-mcp'), ['-c', conf], {
	stdio: ['pipe', 'pipe', 'ignore'],
	env: { ...process.env, SBX_HISTORY: path.join(tmp, 'history.db') },
});
const pending = new Map();
let seq = 0;
readline.createInterface({ input: server.stdout }).on('line', (line) => {
	let m;
	try { m = JSON.parse(line); } catch { return; }
	if (m.id !== undefined && pending.has(m.id) && !m.method) {
		pending.get(m.id)(m);
		pending.delete(m.id);
	}
});
server.on('exit', (code, sig) => {
	for (const done of pending.values()) done({ error: { message: `sbx-mcp exited (${sig || code})` } });
	pending.clear();
});
// A request and its answer; a server that does not answer in a minute is
// an error, not a hang.
const rpc = (method, params) => new Promise((resolve) => {
	const id = ++seq;
	const timer = setTimeout(() => {
		pending.delete(id);
		resolve({ error: { message: `no answer to ${method} in 60 s` } });
	}, 60000);
	pending.set(id, (m) => { clearTimeout(timer); resolve(m); });
	server.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
});
async function call(name, args) {
	const m = await rpc('tools/call', { name, arguments: args });
	if (m.error) throw new Error(`${name}: ${m.error.message}`);
	return m.result;
}

// What the old server's structuredContent (and text) held of a record.
const NEW_FIELDS = new Set(['stdout_bytes', 'stderr_bytes', 'limits_enforced', 'limits_missing', 'kernel_alive']);
function oldView(sc) {
	const v = {};
	for (const [k, x] of Object.entries(sc)) {
		if (NEW_FIELDS.has(k)) continue;
		v[k] = k === 'artifacts' && Array.isArray(x) ? x.map(({ uri, ...a }) => a) : x;
	}
	return v;
}

// Numbered lines up to `bytes` (not one character repeated: a tokenizer
// packs repetition).
const lines = (bytes) => `import sys
n = i = 0
while n < ${bytes}:
    s = "line %d: x=%d y=%d\\n" % (i, i * 7919 % 10007, i * i % 65521)
    sys.stdout.write(s)
    n += len(s)
    i += 1
`;

const cases = [
	['python print(sum([1,2,3]))', 'run_code', { language: 'python', code: 'print(sum([1,2,3]))' }],
	['python exception (traceback)', 'run_code', { language: 'python', code:
		'def parse(s):\n    return int(s)\n\ndef total(rows):\n    return sum(parse(r) for r in rows)\n\nprint(total(["1", "2", "x"]))\n' }],
	['C compile error', 'run_code', { language: 'c', code:
		'#include <stdio.h>\n\nint main(void)\n{\n\tint n = 10\n\tfor (int i = 0; i < n; i++)\n\t\ttotal += i;\n\tprintf("%d\\n", total);\n\treturn 0;\n}\n' }],
	['python 20 KB of lines', 'run_code', { language: 'python', code: lines(20000) }],
	['python 200 KB of lines', 'run_code', { language: 'python', code: lines(200000) }],
	['judged, 3 tests, 1 wrong answer', 'run_code', { language: 'python',
		code: 'a, b = map(int, input().split())\nprint(a + b if a < 10 else a - b)\n',
		tests: [{ stdin: '1 2', expected_stdout: '3' }, { stdin: '3 4', expected_stdout: '7' }, { stdin: '10 5', expected_stdout: '15' }] }],
	['run_cell returning a value', 'run_cell', { code: 'import statistics\nxs = [3, 1, 4, 1, 5, 9, 2, 6]\nstatistics.mean(xs)' }],
	['20 KB with max_output 2000', 'run_code', { language: 'python', code: lines(20000), max_output: 2000 }],
];
const FIGURE = ['matplotlib figure (PNG)', 'run_code', { language: 'python', code:
	'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n' +
	'xs = list(range(50))\nplt.plot(xs, [x * x for x in xs], label="x^2")\nplt.legend()\nplt.title("squares")\n' +
	'plt.savefig("plot.png")\nprint("saved plot.png")\n' }];

const notes = [];
const failed = []; // cases that got no result: the table goes without them, the exit status is 1
const rows = [];
const ratio = (a, b) => (b ? (a / b).toFixed(1) + 'x' : '-');
const fmt = (n) => n.toLocaleString('en-US');
try {
	const init = await rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sbx-bench', version: '1' } });
	if (init.error) throw new Error(`initialize: ${init.error.message}`);
	server.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');

	const probe = await call('run_code', { language: 'python', code: 'import matplotlib' });
	if (probe.structuredContent?.status === 'success')
		cases.push(FIGURE);
	else
		notes.push(`matplotlib figure: skipped, matplotlib is not importable in the sandbox ` +
			`(${(probe.structuredContent?.stderr || probe.content?.[0]?.text || '').trim().split('\n').pop()}; make deps-lang LANGS=pydata installs it)`);

	const session = await call('sandbox_initialize', { language: 'python' });
	const sid = session.structuredContent?.session_id;
	if (!sid) throw new Error(`sandbox_initialize: ${session.content?.[0]?.text}`);

	const full = {}; // each code's record without max_output: what the old server (which had none) returned
	for (const [name, tool, args] of cases) {
		let r;
		try {
			r = await call(tool, tool === 'run_cell' ? { session_id: sid, ...args } : args);
		} catch (e) {
			failed.push(`${name}: ${e.message}`);
			continue;
		}
		const sc = r.structuredContent;
		if (!sc) {
			failed.push(`${name}: no structuredContent (${r.content?.[0]?.text})`);
			continue;
		}
		const blocks = r.content || [];
		const text = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
		const images = blocks.filter((b) => b.type === 'image');
		const others = blocks.filter((b) => b.type !== 'text' && b.type !== 'image');
		if (args.max_output === undefined) full[args.code] = sc;
		const before = JSON.stringify(oldView(full[args.code] || sc));
		const structured = JSON.stringify(sc);
		const table = sc.verdict !== undefined && text.includes('\nverdict ') ? text.slice(text.indexOf('\nverdict ') + 1) : '';
		const row = {
			name, status: sc.verdict ? `${sc.status}, ${sc.verdict}` : sc.status,
			before: tokens(before), after: tokens(text), structured: tokens(structured), table: table ? tokens(table) : 0,
			bytesBefore: Buffer.byteLength(before), bytesAfter: Buffer.byteLength(text),
			images: images.length, imageBytes: images.reduce((n, b) => n + Buffer.from(b.data, 'base64').length, 0),
			others: others.length,
		};
		rows.push(row);
		if (dump) {
			const base = path.join(dump, String(rows.length).padStart(2, '0'));
			fs.writeFileSync(base + '-before.json', before + '\n');
			fs.writeFileSync(base + '-after.txt', text);
			fs.writeFileSync(base + '-structured.json', structured + '\n');
		}
	}
	await call('sandbox_stop', { session_id: sid });
} catch (e) {
	console.error(`bench/mcp_tokens.mjs: ${e.message}`);
	process.exitCode = 1;
} finally {
	server.stdin.end();
	await new Promise((r) => (server.exitCode !== null || server.signalCode !== null ? r() : server.on('exit', r)));
	try {
		fs.rmSync(tmp, { recursive: true, force: true });
	} catch (e) {
		console.error(`bench/mcp_tokens.mjs: ${tmp} left behind: ${e.message}`);
	}
}
if (process.exitCode) process.exit();

const sum = (k) => rows.reduce((n, r) => n + r[k], 0);
const T = { before: sum('before'), after: sum('after'), structured: sum('structured'), images: sum('images'), imageBytes: sum('imageBytes') };
console.log(`# tokens a model reads of a run's result, before and after the compact text (bench/mcp_tokens.mjs), ` +
	`o200k_base (gpt-tokenizer ${tokVersion})`);
console.log('o200k_base approximates, not equals, the counts of other models\' tokenizers (Claude\'s, Gemini\'s, ...): read the ratios.');
console.log('before: the old text block, the record as JSON, which a client read once (content or structuredContent) or twice (both);');
console.log('after: the text block a model reads now; structured: the structuredContent as JSON, for a client that shows it instead.');
console.log();
console.log('| case | status | before, tokens (bytes) | before, read twice | after, text tokens (bytes) | structured, tokens | before / after | images |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows)
	console.log(`| ${r.name} | ${r.status} | ${fmt(r.before)} (${fmt(r.bytesBefore)}) | ${fmt(2 * r.before)} | ${fmt(r.after)} (${fmt(r.bytesAfter)}) | ` +
		`${fmt(r.structured)} | ${ratio(r.before, r.after)} | ${r.images ? `${r.images}, ${fmt(r.imageBytes)} bytes` : '-'}${r.others ? ` (+${r.others} other blocks)` : ''} |`);
console.log(`| total, ${rows.length} results | | ${fmt(T.before)} | ${fmt(2 * T.before)} | ${fmt(T.after)} | ${fmt(T.structured)} | ` +
	`${ratio(T.before, T.after)} | ${T.images ? `${T.images}, ${fmt(T.imageBytes)} bytes` : '-'} |`);
// What each kind of client hands its model of all the results together.
const tbl = sum('table');
console.log();
console.log(`| a client that reads | before, tokens | after, tokens | before / after |`);
console.log('|---|---|---|---|');
for (const [who, b, a] of [
	['the content only', T.before + tbl, T.after],
	['structuredContent in place of the content (Claude Code, VS Code), structured = "auto": none is sent, the text is read', T.before, T.after],
	['structuredContent in place of the content, structured = "always"', T.before, T.structured],
	['both', 2 * T.before + tbl, T.after + T.structured],
])
	console.log(`| ${who} | ${fmt(b)} | ${fmt(a)} | ${ratio(b, a)} |`);
for (const r of rows)
	if (r.table)
		notes.push(`${r.name}: the old server also sent the verdict table as a second text block, ${fmt(r.table)} tokens more ` +
			`for a client that read the content (the after text holds it)`);
const cut = rows.find((r) => r.name.includes('max_output'));
if (cut) notes.push(`${cut.name}: before is the same run's record without max_output, which the old server did not take`);
for (const n of notes) console.log(`- ${n}`);
for (const f of failed) console.log(`- FAILED ${f}`);

if (process.env.SBX_BENCH_SUMMARY && !failed.length) {
	const pick = (what) => rows.find((r) => r.name.includes(what));
	const pair = (r) => `${fmt(r.before)} vs ${fmt(r.after)} (${ratio(r.before, r.after)})`;
	fs.appendFileSync(process.env.SBX_BENCH_SUMMARY,
		`MCP run results, tokens a model reads (o200k_base), before (the record as JSON) vs after (the text): ` +
		`${rows.length} typical results in all / \`print(sum([1,2,3]))\` / 200 KB printed\t` +
		`${fmt(T.before)} vs ${fmt(T.after)} (${ratio(T.before, T.after)}) / ${pair(pick('print(sum'))} / ${pair(pick('200 KB'))}\n`);
}
if (failed.length) process.exitCode = 1;
