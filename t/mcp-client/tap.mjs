// TAP for the SDK clients: one line per check, the plan at the end, and
// the exit status says whether any failed.
let n = 0, failed = 0;
export function check(ok, what, detail) {
  n++;
  if (!ok) failed++;
  console.log(`${ok ? "ok" : "not ok"} ${n} - ${what}`);
  if (!ok && detail !== undefined) console.log(`# ${JSON.stringify(detail).slice(0, 2000)}`);
}
export function done() {
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
}
