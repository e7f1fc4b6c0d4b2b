// The official MCP TypeScript SDK against bin/sbx-mcp: list the tools,
// call each one, check what comes back.  Prints one TAP line per check;
// exits non-zero if any failed.
//   node client.mjs /path/to/sbx-mcp               (StdioClientTransport)
//   node client.mjs http http://HOST:PORT TOKEN    (StreamableHTTPClientTransport, /mcp)
//   node client.mjs sse http://HOST:PORT TOKEN     (SSEClientTransport, /sse)
// With SBX_TEST_MATPLOTLIB=1, also a matplotlib figure, decoded as an image.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { CallToolResultSchema, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, done } from "./tap.mjs";

const [kind, base, token] = process.argv.slice(2);

const auth = { headers: { Authorization: `Bearer ${token}` } };
const transport =
  kind === "http" ? new StreamableHTTPClientTransport(new URL("/mcp", base), { requestInit: auth }) :
  kind === "sse" ? new SSEClientTransport(new URL("/sse", base), { requestInit: auth, eventSourceInit: { fetch: (u, i) => fetch(u, { ...i, headers: { ...i?.headers, ...auth.headers } }) } }) :
  new StdioClientTransport({ command: kind, args: [], env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "sbx-sdk-test", version: "1.0.0" });
await client.connect(transport);
check(client.getServerVersion()?.name === "sbx", "initialize: server info", client.getServerVersion());

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
const want = ["check_backend", "checkpoint_create", "checkpoint_delete", "checkpoint_fork", "checkpoint_list",
  "checkpoint_restore", "get_execution_history", "install_packages", "list_files", "list_supported_languages",
  "port_close", "port_open", "process_list", "process_read", "process_signal", "process_start", "process_write",
  "read_file", "run_cell", "run_code", "sandbox_exec", "sandbox_initialize", "sandbox_stop", "write_file"];
check(JSON.stringify(names) === JSON.stringify(want), "tools/list: the twenty-four tools", names);
check(tools.every((t) => t.title && t.description && t.inputSchema?.type === "object" && t.outputSchema?.type === "object"),
  "every tool has a title, a description, an inputSchema and an outputSchema");

const call = async (name, args) => (await client.callTool({ name, arguments: args }));
const sc = async (name, args) => (await call(name, args)).structuredContent;

let r = await call("run_code", { language: "python", code: "print(sum([1,2,3]))" });
check(r.structuredContent?.status === "success" && r.structuredContent.stdout === "6\n" && !r.isError,
  "run_code python: 6", r);
check(/^success, exit 0, \d+ ms.*\(python\)\nstdout \(2 bytes\):\n6\n$/.test(r.content[0].text),
  "the text for a model: a status line and the output", r.content);

r = await sc("run_code", { language: "cpp", code: "#include <iostream>\n#include <vector>\n\nint main() {\n    std::vector<int> v{1, 2, 3, 4, 5};\n    int sum = 0;\n    for (int x : v) sum += x;\n    std::cout << \"The sum of elements is: \" << sum << std::endl;\n}\n" });
check(r?.status === "success" && r.stdout === "The sum of elements is: 15\n" && r.compile?.status === "success",
  "run_code cpp: the seed's example", r);

r = await sc("run_code", { language: "cpp", code: "int main() { return missing; }" });
check(r?.status === "compile_error" && /missing/.test(r.compile?.stderr), "run_code: a compile error is compile_error", r);

// Judging: tests and compare in, the verdict table in text and structure
// (the SDK validates structuredContent against the output schema).
r = await call("run_code", { language: "c", compare: "tokens",
  code: "#include <stdio.h>\nint main(void){int a,b;if(scanf(\"%d %d\",&a,&b)!=2)return 1;printf(\"%d\\n\",a+b);}",
  tests: [{ stdin: "1 2", expected_stdout: "3" }, { stdin: "2 2", expected_stdout: "5" }, { stdin: "x" }] });
let v = r.structuredContent;
check(v?.verdict === "wrong_answer" && v.tests_passed === 1 && v.tests_total === 3 && v.failed_test === 1 &&
  JSON.stringify(v.tests.map((t) => t.status)) === JSON.stringify(["passed", "wrong_answer", "error"]) &&
  v.tests[1].diff?.expected === "5" && !r.isError, "run_code with tests: compiled once, judged per test", v);
check(v.status === "rejected" && /^rejected, exit 0/.test(r.content[0].text), "a wrong answer's status: rejected", r.content);
check(r.content.some((c) => c.type === "text" && /^verdict wrong_answer: 1 of 3 tests passed/m.test(c.text) &&
  /1 +wrong_answer .*expected "5", got "4"/.test(c.text)), "run_code with tests: the verdict table as text", r.content);

let t0 = Date.now();
r = await sc("run_code", { language: "python", code: "import time\ntime.sleep(30)", timeout: 1 });
let took = (Date.now() - t0) / 1000;
check(r?.status === "timeout" && took < 4, `run_code: sleep(30) with timeout 1 is a timeout after ${took.toFixed(2)} s`, r);

const progress = [];
r = await client.callTool({ name: "run_code", arguments: { language: "c", code: "int main(void){return 3;}" } }, undefined,
  { onprogress: (p) => progress.push(p.message) });
check(r.structuredContent?.status === "error" && r.structuredContent.exit_code === 3, "run_code c: exit 3 is status error", r);
// The SDK dispatches notifications asynchronously and may drop the last
// one ("done") when the response overtakes it.
check(JSON.stringify(progress.slice(0, 3)) === JSON.stringify(["queued", "compiling", "running"]),
  "progress notifications: queued, compiling, running (, done)", progress);

const live = [];
r = await client.callTool({ name: "run_code", arguments: { language: "python",
  code: "import time\nprint('first', flush=True)\ntime.sleep(0.5)\nprint('second', flush=True)\ntime.sleep(0.3)" } }, undefined,
  { onprogress: (p) => live.push(p.message) });
check(r.structuredContent?.stdout === "first\nsecond\n" && live.includes("first\n") && live.includes("second\n") &&
  live.indexOf("first\n") < live.indexOf("second\n"), "live output: each line as a progress notification while it runs", live);

const logged = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (m) => logged.push(m.params));
await client.setLoggingLevel("info");
r = await call("run_code", { language: "python", code: "1", timeout: 999 });
for (let i = 0; i < 50 && !logged.length; i++) await new Promise((res) => setTimeout(res, 20));
check(r.isError === true && logged.some((l) => l.level === "warning" && /max_timeout/.test(l.data)),
  "logging/setLevel: a refused run is a warning message, and a tool error", logged);

r = await call("run_code", { language: "cobol", code: "x" });
check(r.isError === true && /unsupported language/.test(r.structuredContent?.error), "run_code: unknown language is a tool error", r);

r = await sc("list_supported_languages", {});
const py = r?.languages?.find((l) => l.name === "python");
check(py?.available === true && /^Python 3/.test(py.version), "list_supported_languages: python available, with its version", r);

r = await sc("get_execution_history", { limit: 3 });
check(Array.isArray(r?.runs) && r.runs.length === 3 && r.runs.every((x) => x.history_id > 0), "get_execution_history: the last runs", r);
r = await sc("get_execution_history", { stats: true, language: "python" });
check(Array.isArray(r?.stats) && r.stats.some((s) => s.status === "all"), "get_execution_history: stats", r);

r = await call("check_backend", {});
check(r.structuredContent?.usable === true && !r.isError, "check_backend: usable", r);

const s = await sc("sandbox_initialize", { language: "python" });
check(/^[0-9a-f]{32}$/.test(s?.session_id), "sandbox_initialize: a session id", s);
const sid = s.session_id;
r = await sc("write_file", { session_id: sid, path: "data/in.txt", content: "hello" });
check(r?.bytes === 5, "write_file", r);
r = await sc("sandbox_exec", { session_id: sid, code: "print(open('data/in.txt').read().upper())\nopen('out.bin','wb').write(bytes([0,255,1]))" });
check(r?.status === "success" && r.stdout === "HELLO\n", "sandbox_exec: reads the workspace", r);
r = await sc("read_file", { session_id: sid, path: "out.bin" });
check(r?.encoding === "base64" && r.content === "AP8B", "read_file: binary as base64", r);
r = await sc("list_files", { session_id: sid });
check(r?.files?.some((f) => f.path === "data/in.txt" && f.type === "file" && f.size === 5), "list_files", r);
r = await sc("sandbox_exec", { session_id: sid, command: ["cat", "data/in.txt"] });
check(r?.stdout === "hello", "sandbox_exec: a command", r);
// The session's files as resources: read, completed, subscribed to.
r = await client.readResource({ uri: `sbx://session/${sid}/data/in.txt` });
check(r.contents?.[0]?.text === "hello" && r.contents[0].mimeType === "text/plain", "resources/read: a session file", r);
r = await client.complete({ ref: { type: "ref/resource", uri: "sbx://session/{session_id}/{path}" },
  argument: { name: "path", value: "da" }, context: { arguments: { session_id: sid } } });
check(JSON.stringify(r.completion?.values) === JSON.stringify(["data/in.txt"]), "completion/complete: a session's paths", r);
const updated = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (m) => updated.push(m.params.uri));
const watched = `sbx://session/${sid}/watched.txt`;
await client.subscribeResource({ uri: watched });
r = await sc("sandbox_exec", { session_id: sid, code: "open('watched.txt', 'w').write('now')" });
for (let i = 0; i < 50 && !updated.length; i++) await new Promise((res) => setTimeout(res, 20));
check(r?.status === "success" && JSON.stringify(updated) === JSON.stringify([watched]),
  "resources/subscribe: notifications/resources/updated when a run changes the file", updated);
await client.unsubscribeResource({ uri: watched });

if (process.env.SBX_TEST_MATPLOTLIB) {
  r = await call("run_code", { language: "python", timeout: 30,
    code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')\nplt.show()" });
  const img = r.content?.find((c) => c.type === "image");
  const png = img && Buffer.from(img.data, "base64");
  check(img?.mimeType === "image/png" && png?.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])),
    "run_code: a matplotlib figure shown is an image the SDK decodes (PNG)", r.content?.map((c) => c.type));
}

// A process: started, its output awaited, its input written, listed,
// signalled, its end read.
r = await sc("process_start", { session_id: sid, code: "print('ready', flush=True)\nfor l in iter(input, 'q'):\n  print(l[::-1], flush=True)" });
check(/^p[0-9a-f]{16}$/.test(r?.process_id) && r.state === "running", "process_start: a handle, running", r);
const pid = r.process_id;
r = await sc("process_read", { session_id: sid, process_id: pid, wait: 20, until: "ready" });
check(r?.until_found === true && r.output === "ready\n", "process_read: waits for its text", r);
const w = await sc("process_write", { session_id: sid, process_id: pid, data: "olleh\n" });
const r2 = await sc("process_read", { session_id: sid, process_id: pid, cursor: r.cursor, wait: 20, until: "hello" });
check(w?.written_bytes === 6 && r2?.output === "hello\n" && r2.cursor === r.cursor + 6, "process_write: its input; the next read from the cursor", [w, r2]);
r = await sc("process_list", { session_id: sid });
check(r?.processes?.length === 1 && r.processes[0].process_id === pid && r.processes[0].state === "running" && r.ports?.length === 0, "process_list", r);
const po = await sc("port_open", { session_id: sid, port: 8080 });
const pl = await sc("process_list", { session_id: sid });
const pc = await sc("port_close", { session_id: sid, port: 8080 });
check(po?.port === 8080 && /^http:/.test(po.url) && pl?.ports?.[0]?.url === po.url && pc?.closed === true,
  "port_open, listed, port_close", [po, pl?.ports, pc]);
r = await sc("process_signal", { session_id: sid, process_id: pid, signal: "TERM" });
const end = await sc("process_read", { session_id: sid, process_id: pid, cursor: r2.cursor, wait: 20 });
check(r?.signal === "TERM" && end?.state === "exited" && end.end?.signal === "SIGTERM", "process_signal: TERM ends it", [r, end]);

r = await call("install_packages", { session_id: sid, packages: ["-e", "x"] });
check(r.isError === true && /not a package (name|of the registry)/.test(r.structuredContent?.error ?? r.content[0].text),
  "install_packages: option injection refused", r);
r = await sc("sandbox_stop", { session_id: sid });
check(r?.stopped === true, "sandbox_stop", r);
r = await call("read_file", { session_id: sid, path: "data/in.txt" });
check(r.isError === true && /unknown session/.test(r.content[0].text), "a stopped session is gone", r);

// Tasks (2025-11-25): a run as a task, streamed to its result.
const msgs = [];
for await (const m of client.experimental.tasks.callToolStream({ name: "run_code", arguments: { language: "python", code: "print(8)" } },
  undefined, { task: { ttl: 60000 } }))
  msgs.push(m);
check(msgs[0]?.type === "taskCreated" && msgs.at(-1)?.type === "result" && msgs.at(-1).result?.structuredContent?.stdout === "8\n",
  "tasks: run_code as a task, to its result (callToolStream)", msgs.map((m) => m.type));

if (kind === "http") {
  // A task started, its client gone (DELETE), polled and read back by
  // another client of the same token.
  let taskId;
  for await (const m of client.experimental.tasks.callToolStream({ name: "run_code",
    arguments: { language: "python", code: "import time\ntime.sleep(1)\nprint(9)" } }, undefined, { task: { ttl: 60000 } })) {
    if (m.type === "taskCreated") { taskId = m.task.taskId; break; }
  }
  // The session is ours alone: another token does not see it, and after
  // DELETE (terminateSession) it is gone.
  const sidHttp = transport.sessionId;
  check(/^[0-9a-f]{64}$/.test(sidHttp), "Streamable HTTP: an Mcp-Session-Id of 256 bits", sidHttp);
  await transport.terminateSession();
  const res = await fetch(new URL("/mcp", base), { method: "POST", headers: { ...auth.headers, "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", "Mcp-Session-Id": sidHttp }, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }) });
  check(res.status === 404, "after terminateSession (DELETE) the session is unknown: 404", res.status);
  const again = new Client({ name: "sbx-sdk-test-2", version: "1.0.0" });
  await again.connect(new StreamableHTTPClientTransport(new URL("/mcp", base), { requestInit: auth }));
  let st;
  for (let i = 0; i < 100; i++) {
    st = await again.experimental.tasks.getTask(taskId);
    if (st.status !== "working") break;
    await new Promise((r) => setTimeout(r, Math.min(st.pollInterval ?? 100, 200)));
  }
  const tr = await again.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  check(st?.status === "completed" && tr.structuredContent?.stdout === "9\n",
    "tasks: started, its session deleted, polled and read back from another session", { st, tr });
  await again.close();
}
await client.close();
done();
