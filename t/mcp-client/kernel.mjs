// run_cell through the official MCP TypeScript SDK (StdioClientTransport)
// against bin/sbx-mcp: state kept across cells, exceptions and interrupts
// that keep it, a kernel's death reported and then a fresh kernel, reset,
// figures as images, no network, the limits, two sessions apart, and
// nothing left after sandbox_stop.  One TAP line per check.
//   node kernel.mjs /path/to/sbx-mcp-wrapper SANDBOX_UID
// With SBX_TEST_MATPLOTLIB=1, also a matplotlib figure.
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, done } from "./tap.mjs";

const [cmd, uid] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The host's view: processes of the sandbox's program user (root only)
// that descend from this client (the server it started, and its
// sandboxes), not those of anything else on the machine.
const psOr = () => {
  if (!uid) return "";
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,uid=,args="]).toString().split("\n")
    .filter((l) => l.trim()).map((l) => l.trim().split(/\s+/));
  const up = new Map(rows.map((r) => [r[0], r[1]]));
  const ours = (p) => { for (let n = 0; p && p !== "1" && n < 100; n++) { p = up.get(p); if (p === String(process.pid)) return true; } return false; };
  return rows.filter((r) => r[2] === uid && ours(r[0])).map((r) => [r[2], r[0], ...r.slice(3)].join(" ")).join("\n");
};

const client = new Client({ name: "sbx-kernel-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: cmd, args: [], env: { ...process.env }, stderr: "inherit" }));
const call = (name, args) => client.callTool({ name, arguments: args });
const sc = async (name, args) => (await call(name, args)).structuredContent;

const { tools } = await client.listTools();
const tool = tools.find((t) => t.name === "run_cell");
check(tool && tool.inputSchema.required.includes("code") && tool.outputSchema.properties.execution_count,
  "tools/list: run_cell with its schemas", tool);

const sid = (await sc("sandbox_initialize", { language: "python" })).session_id;
let r = await call("run_cell", { session_id: sid, code: "import time\nt0 = time.time()\nx = 6 * 7\nx" });
let s = r.structuredContent;
check(s?.status === "success" && s.value === "42" && s.execution_count === 1 && s.kernel === "started" && !r.isError,
  "a first cell starts the kernel: Out[1] is 42", s);
check(/\nkernel: started, cell 1\n/.test(r.content[0].text) && /\nOut\[1\]: 42\n/.test(r.content[0].text),
  "the text for a model: the kernel and Out[1]", r.content);
s = await sc("run_cell", { session_id: sid, code: "print(x + 1)\ny = [x] * 3" });
check(s?.status === "success" && s.stdout === "43\n" && s.value === null && s.execution_count === 2 && s.kernel === "live",
  "state kept: the next cell sees x; no value for a statement", s);
check(!uid || /sbx_kernel\.py/.test(psOr()), "the kernel lives between cells (seen from the host)", psOr());

s = await sc("run_cell", { session_id: sid, code: "1 / 0" });
check(s?.status === "error" && /ZeroDivisionError/.test(s.stderr) && /<cell 3>/.test(s.stderr) && !/sbx_kernel/.test(s.stderr),
  "an exception is status error with the cell's traceback", s);
s = await sc("run_cell", { session_id: sid, code: "y" });
check(s?.status === "success" && s.value === "[42, 42, 42]" && s.kernel === "live", "... and the state survives it", s);

let t0 = Date.now();
s = await sc("run_cell", { session_id: sid, code: "import time\nwhile True:\n    time.sleep(0.01)", timeout: 1 });
let took = (Date.now() - t0) / 1000;
check(s?.status === "timeout" && /KeyboardInterrupt/.test(s.stderr) && took < 3,
  `a cell past its timeout is interrupted (KeyboardInterrupt) after ${took.toFixed(2)} s`, s);
s = await sc("run_cell", { session_id: sid, code: "x" });
check(s?.status === "success" && s.value === "42" && s.kernel === "live", "... and the state survives the interrupt", s);

s = await sc("run_cell", { session_id: sid, code: "import subprocess\nsubprocess.Popen(['sleep', '300'])\nimport time\ntime.sleep(300)", timeout: 1 });
await sleep(300);
check(s?.status === "timeout" && !/sleep 300/.test(psOr()), "an interrupted cell's child processes are killed", psOr());

s = await sc("run_cell", { session_id: sid, code: "import os\nos.kill(os.getpid(), 11)" });
check(s?.status === "error" && s.signal === "SIGSEGV" && /kernel died of SIGSEGV.*state is lost/.test(s.kernel_note),
  "a kernel that dies (SIGSEGV) is reported in its cell", s);
s = await sc("run_cell", { session_id: sid, code: "'x' in dir()" });
check(s?.status === "success" && s.value === "False" && s.kernel === "restarted" && s.execution_count === 1 &&
  /restarted, state lost/.test(s.kernel_note), "the next cell starts a fresh kernel and says so", s);

await sc("run_cell", { session_id: sid, code: "z = 1" });
s = await sc("run_cell", { session_id: sid, code: "'z' in dir()", reset: true });
check(s?.value === "False" && s.kernel === "restarted" && s.execution_count === 1, "reset: true restarts on purpose", s);

s = await sc("run_cell", { session_id: sid, code: "b = bytearray(1 << 30)" });
check(s?.status === "memory_limit" && /memory limit/.test(s.kernel_note), "a kernel past its memory limit is stopped and reported", s);

s = await sc("run_cell", { session_id: sid, code: "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('no network:', e.errno)" });
check(s?.status === "success" && /^no network/.test(s.stdout), "no network from the kernel", s);

s = await sc("run_cell", { session_id: sid, code: "print('x' * 1000000)" });
check(s?.status === "success" && s.stdout_truncated === true && s.stdout.length < 200000, "a huge output is capped", s);

s = await sc("run_cell", { session_id: sid, code: "import threading, time\ndef bg():\n    time.sleep(0.3)\n    print('late', flush=True)\nthreading.Thread(target=bg).start()\n'started'" });
await sleep(600);
let s2 = await sc("run_cell", { session_id: sid, code: "print('now')" });
check(s?.stdout === "" && s2?.stdout === "late\nnow\n", "output between cells goes at the head of the next cell's", [s, s2]);

// Two sessions: separate kernels, neither sees the other's variables,
// processes or files.
const other = (await sc("sandbox_initialize", { language: "python" })).session_id;
await sc("run_cell", { session_id: sid, code: "secret = 'a'\nopen('mine.txt', 'w').write('a')" });
s = await sc("run_cell", { session_id: other, code: "import os\n('secret' in dir(), os.path.exists('mine.txt'), sorted(p for p in os.listdir('/proc') if p.isdigit()))" });
check(s?.status === "success" && /^\(False, False, \['1', '\d+'\]\)$/.test(s.value), "two sessions' kernels cannot see each other", s);

s = await sc("run_cell", { session_id: sid, language: "javascript", code: "var total = [1, 2, 3].reduce((a, b) => a + b, 0); total" });
let s3 = await sc("run_cell", { session_id: sid, language: "js", code: "total * 2" });
check(s?.value === "6" && s3?.value === "12" && s3.execution_count === 2, "JavaScript: a kernel of its own, state kept", [s, s3]);

r = await call("run_cell", { session_id: sid, language: "c", code: "int x;" });
check(r.isError === true && /no kernel/.test(r.content[0].text), "a language without a kernel is a tool error", r);

if (process.env.SBX_TEST_MATPLOTLIB) {
  r = await call("run_cell", { session_id: sid, timeout: 30, code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')" });
  const img = r.content?.find((c) => c.type === "image");
  const png = img && Buffer.from(img.data, "base64");
  check(img?.mimeType === "image/png" && png?.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])),
    "a figure left open at the end of a cell is an image", r.content?.map((c) => c.type));
}

r = await sc("get_execution_history", { session_id: sid, limit: 50 });
const cells = (r?.runs ?? []).filter((x) => x.execution_count != null);
check(cells.length >= 10 && cells.some((x) => x.code_snippet?.startsWith("1 / 0") && x.status === "error" && x.execution_count === 3),
  "history: each cell is a row, with its execution count", r?.runs?.slice(0, 3));

await sc("sandbox_stop", { session_id: sid });
await sc("sandbox_stop", { session_id: other });
let left = "x";
for (let i = 0; i < 50 && left; i++) { left = psOr(); if (left) await sleep(100); }
check(!uid || left === "", "nothing left after sandbox_stop (from the host: no process of the sandbox user)", left);

await client.close();
done();
