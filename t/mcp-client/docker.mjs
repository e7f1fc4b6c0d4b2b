// The official MCP TypeScript SDK against the container image, started as
// a desktop MCP client starts it: {"command": "docker", "args": ["run",
// "-i", "--rm", ..., IMAGE]} (StdioClientTransport).  Every configured
// language runs; the limits hold inside the container (memory, processes,
// time, no network); a session and a kernel work; the history answers.
// One TAP line per check.
//   [LANGS=python,c,...] node docker.mjs docker run -i --rm FLAGS... IMAGE
// LANGS: the languages the image holds (default: every configured one);
// the others must say they are not available, and why.
// RUN_LIMITS: JSON merged into each language's first run, with its time
// and CPU then printed (an arm64 guest under software emulation, where
// Node alone starts in seconds of CPU: make check-arm64).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { check, done } from "./tap.mjs";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "sbx-docker-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" }));
check(client.getServerVersion()?.name === "sbx", "initialize over docker run -i: server info", client.getServerVersion());
const { tools } = await client.listTools();
check(tools.length === 24, "tools/list: the twenty-four tools", tools.map((t) => t.name));
const call = (name, a) => client.callTool({ name, arguments: a });
const sc = async (name, a) => (await call(name, a)).structuredContent;

const b = await sc("check_backend", {});
check(b?.usable === true && b.backend === "native", "check_backend: the native backend is usable in the container", b);
check(b?.cgroup?.ok === true && ["memory", "pids", "cpu"].every((c) => b.cgroup.controllers.includes(c)),
  "check_backend: cgroups writable in the container (memory, pids, cpu)", b?.cgroup);

const hello = {
  python: "print(6)",
  c: "#include <stdio.h>\nint main(void) { printf(\"6\\n\"); return 0; }",
  cpp: "#include <iostream>\nint main() { std::cout << 6 << std::endl; }",
  javascript: "console.log(6)",
  typescript: "const x: number = 6;\nconsole.log(x);",
  bash: "echo 6",
  go: "package main\nimport \"fmt\"\nfunc main() { fmt.Println(6) }",
  rust: "fn main() { println!(\"6\"); }",
  java: "public class Main { public static void main(String[] a) { System.out.println(6); } }",
  ruby: "puts 6",
  php: "<?php echo 6, \"\\n\";",
};
const expected = process.env.LANGS ? process.env.LANGS.split(",") : Object.keys(hello);
const langs = (await sc("list_supported_languages", {}))?.languages ?? [];
const held = langs.filter((l) => l.available).map((l) => l.name);
check(langs.length === Object.keys(hello).length && held.sort().join() === [...expected].sort().join(),
  `list_supported_languages: ${expected.join(", ")} available in the image`, langs);
check(langs.every((l) => l.available || (typeof l.error === "string" && l.error.length > 0)),
  "list_supported_languages: each language not in the image says why", langs.filter((l) => !l.available));
const limits = process.env.RUN_LIMITS ? JSON.parse(process.env.RUN_LIMITS) : null;
for (const language of expected) {
  const r = await sc("run_code", { language, code: hello[language], ...limits });
  check(r?.status === "success" && r.stdout === "6\n", `run_code ${language}: 6`, r);
  if (limits) console.log(`# ${language}: ${r?.duration_ms} ms, ${r?.cpu_ms} ms of CPU${r?.compile ? `, compile ${r.compile.duration_ms} ms` : ""}`);
}
const missing = Object.keys(hello).find((l) => !expected.includes(l));
if (missing) {
  const r = await call("run_code", { language: missing, code: hello[missing] });
  const text = r.content?.map((c) => c.text ?? "").join(" ") ?? "";
  check(text.includes(missing) && /not (available|installed)|unavailable/i.test(text),
    `run_code ${missing}: not in the image, and the answer says so`, r);
}

let r = await sc("run_code", { language: "python", code: "x = bytearray(512 << 20)\nprint(len(x))", memory: "64m" });
check(r?.status === "memory_limit", "memory: 512 MiB in a 64 MiB run is memory_limit", r);
r = await sc("run_code", { language: "python", code: "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError:\n    print('stopped at', n)", timeout: 5 });
check(r?.status === "success" && /^stopped at ([0-9]+)\n$/.test(r.stdout) && +r.stdout.split(" ")[2] < 64,
  "processes: a fork loop stops below the pids limit", r);
r = await sc("run_code", { language: "bash", code: "while :; do :; done", timeout: 1 });
check(r?.status === "timeout", "time: a busy loop is a timeout after 1 s", r);
r = await sc("run_code", { language: "python", code: "import socket\ns = socket.socket()\ns.settimeout(2)\ntry:\n    s.connect(('1.1.1.1', 53)); print('connected')\nexcept OSError as e:\n    print('no network:', e.errno)" });
check(r?.status === "success" && /^no network/.test(r.stdout), "network: none from a sandbox", r);
r = await sc("run_code", { language: "python", code: "import os\nprint(os.getuid(), open('/etc/hostname').read().strip() if os.path.exists('/etc/hostname') else '-', os.uname().nodename)" });
check(r?.status === "success" && /^[1-9][0-9]* .* sandbox\n$/.test(r.stdout), "the program is not root, and its host is \"sandbox\"", r);

const sid = (await sc("sandbox_initialize", { language: "python" }))?.session_id;
check(/^[0-9a-f]{32}$/.test(sid), "sandbox_initialize: a session", sid);
r = await sc("write_file", { session_id: sid, path: "in.txt", content: "hello" });
r = await sc("sandbox_exec", { session_id: sid, code: "print(open('in.txt').read().upper())" });
check(r?.status === "success" && r.stdout === "HELLO\n", "write_file then sandbox_exec: the workspace", r);
r = await sc("run_cell", { session_id: sid, code: "x = 6 * 7" });
r = await sc("run_cell", { session_id: sid, code: "x" });
check(r?.status === "success" && JSON.stringify(r).includes("42"), "run_cell: a kernel keeps x across cells", r);
// Checkpoints in the container: its workspaces are a tmpfs, so copies.
const ck = await sc("checkpoint_create", { session_id: sid, name: "before" });
await sc("write_file", { session_id: sid, path: "in.txt", content: "changed" });
r = await sc("checkpoint_restore", { session_id: sid, checkpoint: "before" });
const back = (await sc("read_file", { session_id: sid, path: "in.txt" }))?.content;
check(ck?.method === "copy" && r?.restored && back === "hello", "checkpoint_create and _restore: the file as it was (copies)", [ck, r, back]);
r = await sc("sandbox_stop", { session_id: sid });
check(r?.stopped === true, "sandbox_stop", r);

r = await sc("get_execution_history", { limit: 50 });
check(Array.isArray(r?.runs) && r.runs.length >= expected.length, "get_execution_history: the container's runs", r?.runs?.length);
await client.close();
done();
