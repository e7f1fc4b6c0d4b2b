// Checkpoints through the official MCP TypeScript SDK against bin/sbx-mcp:
// a checkpoint, changes, a restore, and the files as they were (the kernel
// restarted, and saying why); two forks that diverge without seeing each
// other or their origin; the tree listed and a checkpoint deleted; the
// bound on checkpoints; over Streamable HTTP, another token refused every
// checkpoint tool on the session.  After the tree's last session stops,
// nothing of it is left on the host (its mounts, its directory).  One TAP
// line per check.
//   node checkpoint.mjs /path/to/sbx-mcp-wrapper STATE_DIR MAX_CHECKPOINTS
//   node checkpoint.mjs http URL TOKEN OTHER_TOKEN STATE_DIR MAX_CHECKPOINTS
import { readdirSync, readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, done } from "./tap.mjs";

const [kind, ...rest] = process.argv.slice(2);
const http = kind === "http";
const [state, maxck] = http ? rest.slice(3) : rest;
const connect = async (token) => {
  const c = new Client({ name: "sbx-checkpoint-test", version: "1.0.0" });
  await c.connect(http
    ? new StreamableHTTPClientTransport(new URL("/mcp", rest[0]), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
    : new StdioClientTransport({ command: kind, args: [], env: { ...process.env }, stderr: "inherit" }));
  return c;
};
const client = await connect(rest[1]);
const sc = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return r.isError ? { isError: true, text: r.content?.[0]?.text } : r.structuredContent;
};
const read = async (s, path) => (await sc("read_file", { session_id: s, path }))?.content;
const files = async (s) => (await sc("list_files", { session_id: s }))?.files?.filter((f) => f.type === "file").map((f) => f.path).sort().join(" ");

const sid = (await sc("sandbox_initialize", { language: "python" })).session_id;
await sc("write_file", { session_id: sid, path: "a.txt", content: "first" });
await sc("write_file", { session_id: sid, path: "d/b.txt", content: "kept" });
let r = await sc("run_cell", { session_id: sid, code: "x = 41" });
const base = await sc("checkpoint_create", { session_id: sid, name: "base" });
check(/^[0-9a-f]{16}$/.test(base?.checkpoint_id) && base.name === "base" && base.parent === null &&
  ["snapshot", "copy"].includes(base.method) && base.kernels_saved === false && base.kernels_live?.[0] === "python",
  "checkpoint_create: an id, its name, no parent, the kernel named as not saved", base);

// Changes, then back.
await sc("write_file", { session_id: sid, path: "a.txt", content: "second" });
await sc("sandbox_exec", { session_id: sid, command: ["sh", "-c", "rm -r d && echo new > c.txt"] });
await sc("run_cell", { session_id: sid, code: "x = 99" });
check(await files(sid) === "a.txt c.txt", "the changes are made", await files(sid));
r = await sc("checkpoint_restore", { session_id: sid, checkpoint: "base" });
check(r?.restored && r.checkpoint_id === base.checkpoint_id && r.kernels_stopped?.[0] === "python",
  "checkpoint_restore by name: restored, its kernel stopped", r);
check(await read(sid, "a.txt") === "first" && await read(sid, "d/b.txt") === "kept" && await files(sid) === "a.txt d/b.txt",
  "the files are as they were at the checkpoint, nothing of after it", await files(sid));
r = await sc("run_cell", { session_id: sid, code: "x" });
check(r?.kernel === "restarted" && /restored from a checkpoint/.test(r.kernel_note) && /NameError/.test(r.stderr),
  "the kernel starts afresh and says why", r);

// Two forks: each its own, neither sees the other nor the origin.
r = await sc("checkpoint_fork", { session_id: sid, checkpoint: base.checkpoint_id, count: 2 });
const [f1, f2] = r?.session_ids ?? [];
check(r?.session_ids?.length === 2 && f1 !== f2 && f1 !== sid, "checkpoint_fork count 2: two new sessions", r);
await sc("write_file", { session_id: f1, path: "a.txt", content: "fork one" });
await sc("sandbox_exec", { session_id: f2, code: "open('only2.txt', 'w').write('2')" });
check(await read(f1, "a.txt") === "fork one" && await read(f2, "a.txt") === "first" && await read(sid, "a.txt") === "first" &&
  await files(f1) === "a.txt d/b.txt" && await files(f2) === "a.txt d/b.txt only2.txt" && await files(sid) === "a.txt d/b.txt",
  "the forks diverge: neither sees the other's writes, the origin sees neither", [await files(f1), await files(f2)]);
const child = await sc("checkpoint_create", { session_id: f1 });
r = await sc("checkpoint_list", { session_id: f2 });
const byId = Object.fromEntries((r?.checkpoints ?? []).map((c) => [c.checkpoint_id, c]));
check(r?.checkpoints?.length === 2 && byId[child.checkpoint_id]?.parent === base.checkpoint_id &&
  byId[child.checkpoint_id]?.session_id === f1 && byId[base.checkpoint_id]?.bytes === 9 &&
  r.sessions?.length === 3 && r.sessions.every((s) => s.checkpoint_id === base.checkpoint_id || s.session_id === f1),
  "checkpoint_list from any session of the tree: the tree, parents, sizes, where each session came from", r);
r = await sc("checkpoint_restore", { session_id: f2, checkpoint: child.checkpoint_id });
check(r?.restored && await read(f2, "a.txt") === "fork one", "a fork restored to its sibling's checkpoint", r);
r = await sc("checkpoint_delete", { session_id: sid, checkpoint: base.checkpoint_id });
const l = await sc("checkpoint_list", { session_id: sid });
check(r?.deleted && l?.checkpoints?.length === 1 && l.checkpoints[0].parent === null && await read(sid, "a.txt") === "first",
  "checkpoint_delete: gone from the tree, its child now a root, the sessions' files kept", l);
r = await sc("checkpoint_restore", { session_id: sid, checkpoint: "base" });
check(r?.isError && /no checkpoint "base"/.test(r.text), "a deleted checkpoint cannot be restored", r);

// The bound.
const made = [];
for (let i = 0; i < Number(maxck); i++) made.push(await sc("checkpoint_create", { session_id: sid }));
check(made.filter((m) => m?.isError).length === 1 && /max_checkpoints/.test(made.at(-1)?.text ?? ""),
  `max_checkpoints ${maxck}: the one past it refused, saying why`, made.map((m) => m?.isError ? m.text : m.checkpoint_id));

if (http) {
  const other = await connect(rest[2]);
  const tries = [];
  for (const [name, args] of [["checkpoint_create", {}], ["checkpoint_list", {}],
    ["checkpoint_restore", { checkpoint: child.checkpoint_id }], ["checkpoint_fork", { checkpoint: child.checkpoint_id }],
    ["checkpoint_delete", { checkpoint: child.checkpoint_id }]])
    tries.push(await other.callTool({ name, arguments: { session_id: sid, ...args } }));
  check(tries.every((t) => t.isError && /unknown session/.test(t.content[0].text)),
    "another token: every checkpoint tool finds no such session", tries.map((t) => t.content?.[0]?.text));
  await other.close();
  r = await sc("checkpoint_list", { session_id: sid });
  check(r?.checkpoints?.some((c) => c.checkpoint_id === child.checkpoint_id), "and its checkpoints are untouched", r);
}

// The tree ends with its last session: nothing of it stays on the host.
const mounts = () => readFileSync("/proc/self/mountinfo", "utf8").split("\n").filter((m) => m.includes(` ${state}/`)).length;
const trees = () => readdirSync(`${state}/sessions/.trees`).filter((n) => !n.startsWith(".")).length;
check(mounts() > 0 && trees() === 1, "while it lives: its mounts and its tree on the host", [mounts(), trees()]);
for (const s of [f1, sid]) await sc("sandbox_stop", { session_id: s });
check(mounts() > 0 && trees() === 1, "a session of it left (a fork): the tree lives on", [mounts(), trees()]);
await sc("sandbox_stop", { session_id: f2 });
check(mounts() === 0 && trees() === 0 && readdirSync(`${state}/sessions`).filter((n) => !n.startsWith(".")).length === 0,
  "the last one stopped: no mount, no tree, no workspace left", [mounts(), trees()]);
await client.close();
done();
