// A session's port opened to a person, through the official MCP TypeScript
// SDK against bin/sbx-mcp: a web app started as a process (port_app.py),
// port_open, then the app reached from outside the sandbox as a person
// would: its page, a POST, a redirect, a large body and a WebSocket; what
// the app sees of the person's credentials (nothing); port_close and
// sandbox_stop.  Over HTTP also another token and no token; with a
// browser script, headless Chromium opens the page.  One TAP line a check.
//   node port.mjs /path/to/sbx-mcp-wrapper
//   node port.mjs http URL TOKEN OTHER_TOKEN [BROWSER_SCRIPT]
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import crypto from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, done } from "./tap.mjs";

const [kind, base, token, otherToken, browser] = process.argv.slice(2);
const http = kind === "http";
const client = new Client({ name: "sbx-port-test", version: "1.0.0" });
await client.connect(http
  ? new StreamableHTTPClientTransport(new URL("/mcp", base), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
  : new StdioClientTransport({ command: kind, args: [], env: { ...process.env }, stderr: "inherit" }));
const sc = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return r.isError ? { isError: true, text: r.content?.[0]?.text } : r.structuredContent;
};
const auth = http ? { Authorization: `Bearer ${token}` } : {};

// A WebSocket by hand (Node 20 has no client): the handshake, one masked
// text frame, the answer's payload.
const wsEcho = (url, text, headers = {}) => new Promise((resolve) => {
  const u = new URL(url);
  const s = net.connect(Number(u.port), u.hostname);
  const key = crypto.randomBytes(16).toString("base64");
  let buf = Buffer.alloc(0), upgraded = false;
  const finish = (v) => { s.destroy(); resolve(v); };
  s.setTimeout(20000, () => finish({ error: "timeout", got: buf.toString() }));
  s.on("error", (e) => finish({ error: e.message }));
  s.on("connect", () => {
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    s.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`);
  });
  s.on("data", (d) => {
    buf = Buffer.concat([buf, d]);
    if (!upgraded) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      const want = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
      if (!/^HTTP\/1\.1 101/.test(head) || !head.includes(want)) return finish({ error: "no upgrade", head });
      upgraded = true;
      buf = buf.subarray(end + 4);
      const payload = Buffer.from(text), mask = crypto.randomBytes(4);
      s.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b, i) => b ^ mask[i % 4])]));
    }
    if (buf.length >= 2 && buf.length >= 2 + (buf[1] & 127)) finish({ text: buf.subarray(2, 2 + (buf[1] & 127)).toString() });
  });
});

// A request by hand: the raw answer, until the server ends it (or the
// chunked body's last chunk) or 10 s pass; keep: resolve with the socket
// once a 101 came.
const raw = (url, head, keep = false) => new Promise((resolve) => {
  const u = new URL(url);
  const s = net.connect(Number(u.port), u.hostname);
  let got = "";
  const finish = (ended) => { if (!keep) s.destroy(); resolve({ got, ended, socket: s }); };
  s.setTimeout(10000, () => finish(false));
  s.on("error", () => finish(true));
  s.on("end", () => finish(true));
  s.on("connect", () => s.write(head.replace("TARGET", u.pathname).replace("HOST", u.host)));
  s.on("data", (d) => {
    got += d.toString();
    if (keep ? /^HTTP\/1\.1 101/.test(got) && got.includes("\r\n\r\n") : got.endsWith("0\r\n\r\n")) finish(!keep);
  });
});
const upgradeHead = (extra) => "GET TARGET HTTP/1.1\r\nHost: HOST\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
  `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`;

const sid = (await sc("sandbox_initialize", { language: "python" })).session_id;
let r = await sc("process_start", { session_id: sid, code: readFileSync(new URL("./port_app.py", import.meta.url), "utf8") });
const app = r?.process_id;
r = await sc("process_read", { session_id: sid, process_id: app, wait: 20, until: "listening on 8000" });
check(r?.until_found, "the app listens on the session's port 8000", r);

r = await sc("port_open", { session_id: sid, port: 8000 });
const url = r?.url;
check(http ? url === `${base}/sessions/${sid}/ports/8000/` && r.path === `/sessions/${sid}/ports/8000/`
  : /^http:\/\/127\.0\.0\.1:\d+\/$/.test(url ?? ""), "port_open: the url to give the person", r);
const again = await sc("port_open", { session_id: sid, port: 8000 });
check(again?.url === url, "opening it again gives the same url", again);

let res = await fetch(url, { headers: auth });
let text = await res.text();
check(res.status === 200 && text.includes("<title>sbx port test</title>"), "GET: the app's page", { status: res.status, text });
if (http) check(!/sbx_dash/.test(res.headers.get("set-cookie")) && /app=1/.test(res.headers.get("set-cookie")),
  "the app cannot set the sign-in's cookie, its own it can", res.headers.get("set-cookie"));

res = await fetch(`${url}echo?x=1&y=%2F`, { method: "POST", body: "hello app",
  headers: { ...auth, Cookie: "sbx_dash=secret-signin; app=1", "X-Forwarded-Prefix": "/spoofed" } });
const seen = await res.json().catch(() => null);
check(seen?.body === "hello app" && seen.path === "/echo?x=1&y=%2F", "POST: the body and the target as sent, the prefix taken off", seen);
if (http) check(seen && !seen.headers.authorization && !JSON.stringify(seen).includes("secret") && !JSON.stringify(seen).includes(token),
  "the app sees neither the token nor the sign-in cookie", seen?.headers);
if (http) check(seen?.headers.cookie === "app=1" && seen.headers["x-forwarded-prefix"] === `/sessions/${sid}/ports/8000`,
  "its own cookies pass, and where it is mounted", seen?.headers);

res = await fetch(`${url}redirect`, { headers: auth, redirect: "manual" });
check(res.status === 302 && res.headers.get("location") === (http ? `/sessions/${sid}/ports/8000/target` : "/target"),
  "a redirect to the app's own path stays under the prefix", [res.status, res.headers.get("location")]);

res = await fetch(`${url}big`, { headers: auth });
const big = Buffer.from(await res.arrayBuffer());
check(res.status === 200 && big.length === 3 << 20 && big.every((b) => b === 120), "a 3 MiB body, whole", big.length);

const ws = await wsEcho(`${url}ws`, "ping", auth);
check(ws.text === "echo ping", "a WebSocket: upgraded and echoed", ws);

if (!http && process.getuid() === 0) {
  // Loopback is every local user's: the listener takes this server's.
  const as = (uid) => spawnSync("setpriv", ["--reuid", uid, "--regid", uid, "--clear-groups", "curl", "-sS", "-m", "10", url],
    { encoding: "utf8" });
  const nobody = as("65534"), root = as("0");
  check(nobody.status !== 0 && !nobody.stdout.includes("sbx port test") && root.stdout.includes("sbx port test"),
    "another local user's connection is refused, this server's user's taken", { nobody: nobody.stderr, root: root.status });
}

r = await sc("process_list", { session_id: sid });
check(r?.ports?.length === 1 && r.ports[0].port === 8000 && r.ports[0].url === url, "process_list lists the open port", r?.ports);

if (http) {
  res = await fetch(url);
  check(res.status === 401 && /Sign in/.test(await res.text()), "no token: 401 and a way to sign in", res.status);
  res = await fetch(url, { headers: { Authorization: `Bearer ${otherToken}` } });
  text = await res.text();
  check(res.status === 404 && !text.includes("sbx port test"), "another token: no such port", [res.status, text]);
  const wsOther = await wsEcho(`${url}ws`, "ping", { Authorization: `Bearer ${otherToken}` });
  check(!wsOther.text, "another token's WebSocket: refused", wsOther);
  res = await fetch(url.replace(/\/$/, ""), { headers: auth, redirect: "manual" });
  check(res.status === 308 && res.headers.get("location") === `/sessions/${sid}/ports/8000/`, "the path without its slash gets it", res.status);
  res = await fetch(`${base}/sessions/${sid}/ports/8001/`, { headers: auth });
  check(res.status === 404, "a port not opened: 404", res.status);

  // A hostile or broken app: each answer is refused or passed on whole,
  // and the server lives on for the next.
  const codes = {};
  for (const p of ["switch", "chunked", "garbage", "empty", "lengths"]) {
    res = await fetch(`${url}${p}`, { headers: auth });
    codes[p] = res.status;
    await res.text();
  }
  check(Object.values(codes).every((c) => c === 502), "an unasked 101, chunks to HTTP/1.0, not HTTP, two lengths: 502", codes);
  res = await fetch(`${url}interim`, { headers: auth });
  check(res.status === 200 && (await res.text()) === "final", "an interim 103 is dropped, the final answer passed on", res.status);
  res = await fetch(`${url}tabcookie`, { headers: auth });
  check(!/sbx_dash/i.test(res.headers.get("set-cookie") ?? ""), "the sign-in's cookie set by a tab-padded or upper-case name: dropped", res.headers.get("set-cookie"));
  res = await fetch(`${url}reset`, { headers: auth });
  const cut = await res.arrayBuffer().then((b) => b.byteLength, (e) => e.name);
  check(typeof cut === "string", "a body cut by a reset is cut for the browser too, not ended", cut);
  const many = Array.from({ length: 60 }, (_, i) => `c${i}=AAAAAAAA`);
  many.splice(30, 0, "sbx_dash=secret-signin");
  res = await fetch(`${url}echo`, { method: "POST", body: "x", headers: { ...auth, Cookie: many.join(";") } });
  const echoed = (await res.json().catch(() => null))?.headers?.cookie;
  check(echoed === many.filter((c) => !c.startsWith("sbx_dash")).join("; "), "60 cookies without spaces: all but the sign-in's, whole", echoed);
  res = await fetch(`${url}echo`, { method: "POST", body: "x", headers: { Authorization: `Bearer ${otherToken}`, Cookie: many.join(";") } });
  check(res.status === 404, "and from another token: 404, nothing parsed for it", res.status);
  const nows = await raw(`${url}nows`, upgradeHead(`Authorization: Bearer ${token}\r\n`));
  check(nows.ended && /^HTTP\/1\.1 404/.test(nows.got), "a WebSocket asked of a keep-alive app that says 404: the answer ends", nows);
  if (browser) {
    const out = execFileSync("node", [browser, base, token, otherToken, url], { encoding: "utf8", timeout: 120000 });
    for (const line of out.trim().split("\n"))
      check(line.startsWith("ok "), `Chromium: ${line.slice(3)}`, line);
  }
}

const open = await raw(`${url}ws`, upgradeHead(http ? `Authorization: Bearer ${token}\r\n` : ""), true);
const closed = new Promise((resolve) => { open.socket.on("close", () => resolve(true)); setTimeout(() => resolve(false), 10000); });
r = await sc("port_close", { session_id: sid, port: 8000 });
res = await fetch(url, { headers: auth }).catch((e) => ({ status: "refused", e }));
check(r?.closed && (http ? res.status === 404 : res.status === "refused"), "port_close: the url stops answering", [r, res.status]);
check(/^HTTP\/1\.1 101/.test(open.got) && await closed, "and a WebSocket open through it ends", open.got);

r = await sc("port_open", { session_id: sid, port: 8000 });
const url2 = r?.url;
r = await sc("sandbox_stop", { session_id: sid });
res = await fetch(url2, { headers: auth }).catch((e) => ({ status: "refused", e }));
check(r?.stopped && (http ? res.status === 404 : res.status === "refused"), "sandbox_stop closes its ports", res.status);
await client.close();
done();
