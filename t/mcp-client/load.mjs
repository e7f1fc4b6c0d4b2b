// Many official-SDK clients over Streamable HTTP at once, each making its
// calls one after another; every answer must come back to its caller with
// its own output.  Prints one JSON summary line; exits non-zero if any
// call failed or was answered with another's output.
//   node load.mjs http://HOST:PORT TOKEN_FILE CLIENTS CALLS
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, tokenFile, nClients, nCalls] = process.argv.slice(2);
const tokens = readFileSync(tokenFile, "utf8").split("\n").filter((l) => l && !l.startsWith("#"));
let ok = 0, wrong = 0;
const errors = [];
const t0 = Date.now();

async function one(i) {
  const token = tokens[i % tokens.length];
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", base),
    { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: `load-${i}`, version: "1.0.0" });
  await client.connect(transport);
  for (let j = 0; j < Number(nCalls); j++) {
    const want = `client ${i} call ${j}`;
    try {
      const r = await client.callTool({ name: "run_code", arguments: { language: "bash", code: `echo "${want}"` } },
        undefined, { timeout: 120000 });
      if (r.structuredContent?.status === "success" && r.structuredContent.stdout === `${want}\n`) ok++;
      else { wrong++; errors.push({ want, got: r.structuredContent ?? r.content }); }
    } catch (e) {
      errors.push({ want, error: String(e) });
    }
  }
  await transport.terminateSession();
  await client.close();
}

await Promise.all(Array.from({ length: Number(nClients) }, (_, i) => one(i).catch((e) => errors.push({ client: i, error: String(e) }))));
const ms = Date.now() - t0;
console.log(JSON.stringify({ clients: Number(nClients), calls: Number(nCalls), ok, wrong, failed: errors.length - wrong,
  seconds: ms / 1000, calls_per_second: Math.round(ok / (ms / 1000)), errors: errors.slice(0, 5) }));
process.exit(ok === Number(nClients) * Number(nCalls) ? 0 : 1);
