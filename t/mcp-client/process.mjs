// A session's processes through the official MCP TypeScript SDK against
// bin/sbx-mcp: a process started and read in later calls, a prompt answered
// on its terminal, its limits, its end at sandbox_stop seen from the host;
// over Streamable HTTP also its output read by a new connection of the
// same token after the first is gone, and refused to another token.  One
// TAP line per check.
//   node process.mjs /path/to/sbx-mcp-wrapper [SANDBOX_UID]
//   node process.mjs http URL TOKEN OTHER_TOKEN
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, done } from "./tap.mjs";

const [kind, ...rest] = process.argv.slice(2);
const http = kind === "http";
const connect = async (token) => {
  const c = new Client({ name: "sbx-process-test", version: "1.0.0" });
  await c.connect(http
    ? new StreamableHTTPClientTransport(new URL("/mcp", rest[0]), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
    : new StdioClientTransport({ command: kind, args: [], env: { ...process.env }, stderr: "inherit" }));
  return c;
};
// The host's view: processes of this client's tree (stdio: the server it
// started and its sandboxes) whose command line has the marker.
const ours = (marker) => {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="]).toString().split("\n")
    .filter((l) => l.trim()).map((l) => l.trim().split(/\s+/));
  const up = new Map(rows.map((r) => [r[0], r[1]]));
  const mine = (p) => { for (let n = 0; p && p !== "1" && n < 100; n++) { p = up.get(p); if (p === String(process.pid)) return true; } return false; };
  return rows.filter((r) => mine(r[0]) && r.slice(2).join(" ").includes(marker)).length;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let client = await connect(rest[1]);
const sc = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return r.isError ? { isError: true, text: r.content?.[0]?.text } : r.structuredContent;
};
const sid = (await sc("sandbox_initialize", { language: "python" })).session_id;

// A server of sorts, and the next calls to it.
let r = await sc("process_start", { session_id: sid,
  code: "import sys, time\nprint('listening on stdin', flush=True)\nfor i, l in enumerate(sys.stdin):\n    print(i, l.upper(), end='', flush=True)" });
const pid = r?.process_id;
check(r?.state === "running" && /^p[0-9a-f]{16}$/.test(pid), "process_start: running, a handle", r);
r = await sc("process_read", { session_id: sid, process_id: pid, wait: 20, until: "listening" });
check(r?.until_found && r.output === "listening on stdin\n", "process_read: waits for \"listening\"", r);
let cursor = r.cursor;
for (const word of ["one", "two"]) await sc("process_write", { session_id: sid, process_id: pid, data: `${word}\n` });
r = await sc("process_read", { session_id: sid, process_id: pid, cursor, wait: 20, until: "TWO" });
check(r?.output === "0 ONE\n1 TWO\n", "two writes, read from the cursor: only what is new", r);
cursor = r.cursor;

if (http) {
  // The connection goes; a new one of the same token reads on from the
  // cursor, and writes; another token does not see the session at all.
  await client.close();
  client = await connect(rest[1]);
  await sc("process_write", { session_id: sid, process_id: pid, data: "three\n" });
  r = await sc("process_read", { session_id: sid, process_id: pid, cursor, wait: 20, until: "THREE" });
  check(r?.output === "2 THREE\n", "Streamable HTTP: a new connection of the token reads the same process on", r);
  const other = await connect(rest[2]);
  const o = await other.callTool({ name: "process_read", arguments: { session_id: sid, process_id: pid } });
  const ol = await other.callTool({ name: "process_list", arguments: { session_id: sid } });
  const os = await other.callTool({ name: "process_signal", arguments: { session_id: sid, process_id: pid, signal: "KILL" } });
  check(o.isError && ol.isError && os.isError && /unknown session/.test(o.content[0].text),
    "another token: the session is unknown to it, its processes too", [o, ol, os]);
  await other.close();
  r = await sc("process_list", { session_id: sid });
  check(r?.processes?.[0]?.state === "running", "the other token's signal did nothing", r);
}

// A web server, then the next calls to it: the session's processes, runs
// and kernels share its loopback.
r = await sc("process_start", { session_id: sid, command: ["python3", "-u", "-m", "http.server", "8000", "--bind", "127.0.0.1"] });
const web = r?.process_id;
r = await sc("process_read", { session_id: sid, process_id: web, wait: 20, until: "Serving HTTP" });
check(r?.until_found, "a web server starts in the session", r);
const get = "import urllib.request as u\nprint(u.urlopen('http://127.0.0.1:8000/').status)";
const x = await sc("sandbox_exec", { session_id: sid, code: get });
const k = await sc("run_cell", { session_id: sid, code: "import urllib.request as u\nu.urlopen('http://localhost:8000/').status" });
check(x?.stdout === "200\n" && k?.value === "200", "sandbox_exec and run_cell reach it on the session's loopback", [x, k]);
r = await sc("process_read", { session_id: sid, process_id: web, cursor: r.cursor, wait: 20, until: "GET / HTTP/1.1\" 200" });
check(r?.until_found, "its log says so", r);
const sid2 = (await sc("sandbox_initialize", { language: "python" })).session_id;
const y = await sc("sandbox_exec", { session_id: sid2, code: get });
const z = await sc("run_code", { language: "python", code: get });
check(/Connection refused/.test(y?.stderr) && /Connection refused/.test(z?.stderr), "another session and a stateless run do not", [y?.stderr, z?.stderr]);
await sc("sandbox_stop", { session_id: sid2 });
await sc("process_signal", { session_id: sid, process_id: web, signal: "INT" });

// A prompt on a terminal, answered; Ctrl-C written to it.
r = await sc("process_start", { session_id: sid, tty: { rows: 20, cols: 70 },
  code: "import os\nname = input('name? ')\nprint('hello', name, os.get_terminal_size())\ntry:\n    input()\nexcept KeyboardInterrupt:\n    print('bye')" });
const tty = r?.process_id;
r = await sc("process_read", { session_id: sid, process_id: tty, wait: 20, until: "name? " });
check(r?.output === "name? ", "tty: the prompt, as a terminal shows it", r);
await sc("process_write", { session_id: sid, process_id: tty, data: "Ada\n" });
r = await sc("process_read", { session_id: sid, process_id: tty, cursor: r.cursor, wait: 20, until: "lines=20" });
check(/^Ada\r\nhello Ada os\.terminal_size\(columns=70, lines=20\)\r\n/.test(r?.output ?? ""), "tty: the answer echoed, the size the call gave", r);
await sc("process_write", { session_id: sid, process_id: tty, data: "\u0003" });
for (let i = 0; i < 50 && r?.state !== "exited"; i++)
  r = await sc("process_read", { session_id: sid, process_id: tty, cursor: r.cursor, wait: 10 });
check(r?.state === "exited" && r.end?.status === "success", "tty: Ctrl-C written to it ends it as at a desk", r);

// A process has a run's limits.
r = await sc("process_start", { session_id: sid, memory: "64m", code: "x = bytearray(512 << 20)" });
const big = r?.process_id;
for (let i = 0; i < 50 && r?.state !== "exited"; i++)
  r = await sc("process_read", { session_id: sid, process_id: big, wait: 10 });
check(r?.end?.status === "memory_limit", "memory: 512 MiB in a 64 MiB process is memory_limit", r);

// sandbox_stop ends what still runs (seen from the host, for stdio: the
// server is this client's child).
if (!http) {
  await sc("process_start", { session_id: sid, command: ["sleep", "331"] });
  let n = 0;
  for (let i = 0; i < 100 && !(n = ours("sleep 331")); i++) await sleep(50);
  check(n === 1, "the process runs (the host sees it)", n);
}
r = await sc("sandbox_stop", { session_id: sid });
let left = 1;
for (let i = 0; i < 100 && (left = http ? 0 : ours("sleep 331")); i++) await sleep(50);
check(r?.stopped && left === 0, "sandbox_stop ends the session's processes", { r, left });
r = await sc("process_list", { session_id: sid });
check(r?.isError && /unknown session/.test(r.text), "and they go with it", r);
await client.close();
done();
