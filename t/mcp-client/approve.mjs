// Approve on deny through the official SDK: a session whose run is refused
// a host its network lacks, the server's question (elicitation/create) put
// to a client that can answer it, and the session's next run let through.
//   node approve.mjs ANSWER TRANSPORT...   ANSWER: accept, decline or none
//   (a client without elicitation); TRANSPORT as client.mjs's: a path to
//   sbx-mcp (stdio), or http BASE TOKEN.
// The configuration lets runs ask for 10.9.9.9 and 10.9.9.8 (t/65): the
// proxy lets a listed one through to its address check, which refuses
// both (private), so nothing here needs a network.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { check, done } from "./tap.mjs";

const [answer, kind, base, token] = process.argv.slice(2);
const transport = kind === "http"
  ? new StreamableHTTPClientTransport(new URL("/mcp", base), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
  : new StdioClientTransport({ command: kind, args: [], env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "sbx-approve-test", version: "1.0.0" },
  { capabilities: answer === "none" ? {} : { elicitation: {} } });
const asked = [];
if (answer !== "none")
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer === "accept" ? { action: "accept", content: { host1: true } } : { action: "decline" };
  });
await client.connect(transport);

const probe = `import os, socket, urllib.parse
p = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])
s = socket.create_connection((p.hostname, p.port)); s.sendall(b"CONNECT 10.9.9.8:443 HTTP/1.1\\r\\n\\r\\n")
print(s.recv(100).split(b"\\r\\n")[0].decode())`;
const init = await client.callTool({ name: "sandbox_initialize", arguments: { language: "python", network: ["10.9.9.9"] } });
const sid = init.structuredContent?.session_id;
check(sid && JSON.stringify(init.structuredContent.network) === '["10.9.9.9"]', "a session whose network is 10.9.9.9", init);

let r = await client.callTool({ name: "sandbox_exec", arguments: { session_id: sid, code: probe } });
let s = r.structuredContent;
check(s?.stdout === "HTTP/1.1 403 Forbidden\n" && s.egress?.[0]?.host === "10.9.9.8" && s.egress[0].allowed === false,
  "the run is refused 10.9.9.8, which its list lacks", s);
const text = r.content[0].text;
check(/connections refused or failed:\n  10\.9\.9\.8:443: 10\.9\.9\.8:443 is not in this sandbox's network allow-list \(10\.9\.9\.9\): ask for it in the request's "network"/.test(text),
  "the text says why, and how to ask", text);
if (answer === "none") {
  check(asked.length === 0 && s.network_asked === undefined && s.network_approved === undefined,
    "a client without elicitation is not asked", s);
} else {
  check(asked.length === 1 && /tried to reach 10\.9\.9\.8, which the session's network does not include/.test(asked[0].message) &&
    asked[0].requestedSchema?.properties?.host1?.type === "boolean" && asked[0].requestedSchema.properties.host1.title === "Allow 10.9.9.8",
    "its user is asked, one yes or no per host", asked);
  check(s.network_asked === answer, "the answer records what the user said", s);
  if (answer === "accept")
    check(JSON.stringify(s.network_approved) === '["10.9.9.8"]' &&
      /approved by the session's user for its later runs: 10\.9\.9\.8 \(this run did not reach them: run again\)/.test(text),
      "approved: said in the record and the text", { s, text });
  else
    check(JSON.stringify(s.network_approved) === "[]" && /the session's user was asked to allow them: decline/.test(text),
      "declined: nothing approved", { s, text });
}
// the session's next run: through the list (then refused as a private
// address) where approved, refused by the list again where not
r = await client.callTool({ name: "sandbox_exec", arguments: { session_id: sid, code: probe } });
s = r.structuredContent;
if (answer === "accept")
  check(s?.stdout === "HTTP/1.1 502 Bad Gateway\n" && s.egress?.[0]?.allowed === true && /no address a sandbox may reach/.test(s.egress[0].why) &&
    s.network_asked === undefined && JSON.stringify(s.network) === '["10.9.9.9","10.9.9.8"]' &&
    JSON.stringify(s.user_approved) === '["10.9.9.8"]', "the next run's list has it, and its record says the user approved it", s);
else
  check(s?.stdout === "HTTP/1.1 403 Forbidden\n" && JSON.stringify(s.network) === '["10.9.9.9"]' && s.user_approved === undefined,
    "the next run's list is as it was", s);
check(answer === "none" || asked.length === (answer === "accept" ? 1 : 2), "asked once per refusal, never for what the list allows", asked.length);
// a host outside the configuration's network is never put to the user
r = await client.callTool({ name: "sandbox_exec", arguments: { session_id: sid, code: probe.replace("10.9.9.8", "10.7.7.7") } });
check(r.structuredContent?.stdout === "HTTP/1.1 403 Forbidden\n" && r.structuredContent.network_asked === undefined,
  "a host the configuration does not allow is not asked about", r.structuredContent);
await client.callTool({ name: "sandbox_stop", arguments: { session_id: sid } });
await client.close();
done();
