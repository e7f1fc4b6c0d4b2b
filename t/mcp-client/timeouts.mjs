// Long runs against the SDK's request timeout (60 s by default, not reset
// by progress unless asked): what the server offers so that a run is not
// lost to it.  The server's [mcp] progress_interval must be 1 s.
//   node timeouts.mjs /path/to/sbx-mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { check, done } from "./tap.mjs";

const client = new Client({ name: "sbx-timeouts-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: process.argv[2], args: [], stderr: "inherit" }));

// The longest a plain call may ask is below the SDK's default timeout.
const { tools } = await client.listTools();
const desc = tools.find((t) => t.name === "run_code").description;
const most = Number(/max (\d+) s, or \d+ s as a task/.exec(desc)?.[1]);
check(most > 0 && most * 1000 < DEFAULT_REQUEST_TIMEOUT_MSEC, `a call's longest timeout (${most} s) is below the SDK's default (${DEFAULT_REQUEST_TIMEOUT_MSEC} ms)`, desc);

// More than that is refused at once, saying what to do instead.
let r = await client.callTool({ name: "run_code", arguments: { language: "python", code: "print(1)", timeout: 59 } });
check(r.isError === true && /max_timeout/.test(r.content[0].text) && /as a task/.test(r.content[0].text),
  "a timeout past it is a tool error that names max_timeout and tasks", r.content);

// A silent run longer than the client's timeout: the heartbeat keeps it
// alive for a client that resets on progress ...
const slow = { language: "python", code: "import time\ntime.sleep(4)\nprint('done')" };
const beats = [];
r = await client.callTool({ name: "run_code", arguments: slow }, undefined,
  { timeout: 2500, resetTimeoutOnProgress: true, onprogress: (p) => beats.push(p.message) });
check(r.structuredContent?.stdout === "done\n" && beats.filter((m) => m === "still running").length >= 2,
  "progress every second keeps a 4 s run alive past a 2.5 s timeout (resetTimeoutOnProgress)", { beats, r });

// ... and is lost to one that does not: the case tasks are for.
let err;
try {
  await client.callTool({ name: "run_code", arguments: slow }, undefined, { timeout: 2500 });
} catch (e) {
  err = e;
}
check(err && /timed out/i.test(String(err.message)), "without it, the same call times out in the client", String(err));

// As a task, each request is short: the run outlives any one timeout.
const msgs = [];
for await (const m of client.experimental.tasks.callToolStream({ name: "run_code", arguments: slow }, undefined,
  { task: { ttl: 60000 }, timeout: 2500 }))
  msgs.push(m);
check(msgs.at(-1)?.type === "result" && msgs.at(-1).result?.structuredContent?.stdout === "done\n",
  "as a task, the 4 s run comes back to a client whose requests time out at 2.5 s", msgs.map((m) => m.type));

await client.close();
done();
