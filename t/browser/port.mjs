// A session's open port in a real browser (Debian's Chromium, headless,
// puppeteer-core), run by t/mcp-client/port.mjs while the port is open:
// refused before the sign-in, the app's page and its WebSocket after it,
// the dashboard's link to it, and nothing for another token's sign-in.
// Prints one line a check: "ok WHAT" or "no WHAT: DETAIL".
//
// usage: node port.mjs BASE TOKEN OTHER_TOKEN PORT_URL
import puppeteer from "puppeteer-core";

const [base, token, other, url] = process.argv.slice(2);
const say = (ok, what, detail) => console.log(`${ok ? "ok" : "no"} ${what}${ok ? "" : `: ${JSON.stringify(detail)}`}`);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // no sandbox: the test runs as root, which Chromium's own sandbox refuses
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
const signIn = async (page, t) => {
  await page.goto(base + "/", { waitUntil: "load" });
  await page.type("form#login input[name=token]", t);
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click("form#login button[type=submit]")]);
};
try {
  const page = await browser.newPage();
  let r = await page.goto(url, { waitUntil: "load" });
  say(r.status() === 401 && (await page.content()).includes("Sign in"), "before signing in the port is 401, with a way to sign in", r.status());

  await signIn(page, token);
  r = await page.goto(url, { waitUntil: "load" });
  const echo = await page.waitForFunction(() => document.getElementById("s")?.textContent.startsWith("echo"), { timeout: 20000 })
    .then(() => page.$eval("#s", (e) => e.textContent)).catch((e) => String(e));
  say(r.status() === 200 && (await page.title()) === "sbx port test", "signed in: the app's page", r.status());
  say(echo === "echo: echo ping from the page", "the page's WebSocket to the app echoes", echo);

  r = await page.goto(base + "/sessions", { waitUntil: "load" });
  const links = await page.$$eval("#live-sessions td.ports a", (as) => as.map((a) => a.href));
  say(links.includes(url), "the dashboard's live sessions link the open port", links);

  // Another token signed in, in a browser context of its own (its own cookies).
  const ctx = await browser.createBrowserContext();
  const stranger = await ctx.newPage();
  await signIn(stranger, other);
  r = await stranger.goto(url, { waitUntil: "load" });
  say(r.status() === 404 && !(await stranger.content()).includes("sbx port test"), "another token's sign-in: no such port", r.status());
  await ctx.close();
} finally {
  await browser.close();
}
