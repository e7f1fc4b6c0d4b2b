// The dashboard in a real browser: Debian's Chromium, headless, driven by
// puppeteer-core.  Signs in with the form, reads the overview, a filtered
// list and a hostile run's page, watches a new run appear live, signs out.
// Every check is a TAP line; screenshots go to SHOTS.
//
// usage: node dash.mjs BASE TOKEN HOSTILE_HISTORY_ID SHOTS LOG_CMD...
//   LOG_CMD: a command that logs one more run (its record on stdin) for
//   the live-update check.
import { spawnSync } from "node:child_process";
import puppeteer from "puppeteer-core";
import { check, done } from "../mcp-client/tap.mjs";

const [base, token, hostile, shots, ...logCmd] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // no sandbox: the test runs as root, which Chromium's own sandbox refuses
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const dialogs = [];
  page.on("dialog", async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  const violations = [];
  page.on("console", (m) => { if (/Content Security Policy/.test(m.text())) violations.push(m.text()); });

  let r = await page.goto(base + "/", { waitUntil: "load" });
  check(r.status() === 401, "without a sign-in the overview is 401", r.status());
  check(await page.$("form#login input[name=token]") !== null, "and shows the sign-in form");

  await page.type("form#login input[name=token]", token);
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("form#login button[type=submit]")]);
  check(new URL(page.url()).pathname === "/" && !page.url().includes(token), "signed in: redirected to / and the token is not in the address", page.url());
  const cookies = await browser.cookies();
  const c = cookies.find((k) => k.name === "sbx_dash");
  check(c && c.httpOnly && c.sameSite === "Strict" && c.path === "/", "the sign-in cookie is HttpOnly, SameSite=Strict", c);
  check(!(await page.evaluate(() => document.cookie)).includes("sbx_dash"), "and script cannot read it");
  check((await page.$eval("h1", (e) => e.textContent)) === "Overview", "the overview");
  check(await page.$("#status-counts tbody tr") !== null && await page.$("svg#chart-durations") !== null,
    "counts by status and the duration chart");
  await page.screenshot({ path: `${shots}/overview.png`, fullPage: true });

  r = await page.goto(base + "/runs?language=python&q=" + encodeURIComponent("<script>"), { waitUntil: "load" });
  const rows = await page.$$eval("table#runs tbody tr td.snippet", (tds) => tds.map((t) => t.textContent));
  check(r.status() === 200 && rows.length > 0 && rows.every((t) => t.includes("<script>")),
    "a filtered list: python runs whose code has <script>, shown as text", rows.slice(0, 3));
  await page.screenshot({ path: `${shots}/runs.png`, fullPage: true });

  r = await page.goto(`${base}/runs/${hostile}`, { waitUntil: "load" });
  check(r.status() === 200, "the hostile run's page", r.status());
  const seen = await page.evaluate(() => ({
    id: document.querySelector("#run-id")?.textContent,
    stdout: document.querySelector("#stdout")?.textContent,
    code: document.querySelector("#code")?.textContent,
    scripts: [...document.scripts].map((s) => s.src),
    injected: document.querySelectorAll("img[src='x'], svg[onload], a[href^='javascript:'], [onerror], iframe").length,
    pwned: window.__pwned === true,
  }));
  check(seen.id === "xss-1", "its id", seen.id);
  check(seen.stdout && seen.stdout.includes("<img src=x onerror=window.__pwned=true>") &&
    seen.stdout.includes("\u241b[31m"), "its output as text, ANSI escapes shown, not obeyed", seen.stdout);
  check(seen.code && seen.code.includes("<script>window.__pwned=true</script>"), "its code as text", seen.code);
  check(seen.scripts.length === 1 && seen.scripts[0].endsWith("/static/dash.js"), "no script but the page's own", seen.scripts);
  check(seen.injected === 0 && !seen.pwned && dialogs.length === 0, "nothing of it became markup or ran", { seen, dialogs });
  await page.screenshot({ path: `${shots}/run.png`, fullPage: true });

  // live: a run logged now shows up on the open overview
  await page.goto(base + "/", { waitUntil: "load" });
  const rec = { id: "live-1", language: "bash", code: "echo live", status: "success", duration_ms: 1.5,
    started_at: new Date().toISOString(), principal: process.env.SBX_PRINCIPAL || undefined };
  const lg = spawnSync(logCmd[0], logCmd.slice(1), { input: JSON.stringify(rec) + "\n" });
  check(lg.status === 0, "a new run logged", lg.stderr?.toString());
  let live = null;
  try {
    live = await page.waitForFunction(() => [...document.querySelectorAll("#recent tbody tr td.id .rid")].some((t) => t.textContent === "live-1"), { timeout: 15000 });
  } catch { live = null; }
  check(live !== null, "appears on the open overview without a reload");
  check(violations.length === 0, "no Content-Security-Policy violation on any page", violations);

  // a phone's width: no page scrolls sideways (a wide table scrolls alone)
  await page.setViewport({ width: 420, height: 800 });
  const wide = [];
  for (const path of ["/", "/runs", `/runs/${hostile}`, "/sessions"]) {
    await page.goto(base + path, { waitUntil: "load" });
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    if (w > 420) wide.push(`${path}: ${w}px`);
  }
  await page.screenshot({ path: `${shots}/narrow.png`, fullPage: true });
  check(wide.length === 0, "at 420 px no page is wider than the screen", wide);
  await page.setViewport({ width: 1280, height: 900 });

  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("form#logout button")]);
  r = await page.goto(base + "/", { waitUntil: "load" });
  check(r.status() === 401, "signed out: the overview is 401 again", r.status());
} finally {
  await browser.close();
}
done();
