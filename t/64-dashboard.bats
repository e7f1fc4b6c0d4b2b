#!/usr/bin/env bats
# The history's web view (issue 30): sbx-mcp --listen serves it at /, behind
# the same Host, Origin and token checks as /mcp.  curl for every status and
# header, the sign-in cookie and its attributes, a token's own runs, keyset
# paging, an XSS corpus rendered as text, sbx-history --format html; then a
# real browser (Debian's Chromium through puppeteer-core, t/browser).
load helpers

TOKEN=tok-aaaaaaaaaaaaaaaaaaaaaaaaaaaa
TOKEN2=tok-bbbbbbbbbbbbbbbbbbbbbbbbbbbb

local_setup() {
	conf=$(conf_with 's/^history_code *=.*/history_code = "full"/')
	printf '%s\n%s\n' "$TOKEN" "$TOKEN2" > tokens
	chmod 600 tokens
	export SBX_HISTORY=$BATS_TEST_TMPDIR/var/h.db
}

teardown() {
	http_stop
}

set_key() { sed -i "s|^$1 *=.*|$1 = $2|" "$conf"; }


# log JSON...: records straight into the history, as sbx-log writes them.
log() { printf '%s\n' "$@" | "$BIN/sbx-log" -c "$conf" --store-code full > /dev/null; }

# The XSS corpus: markup, attribute breaking, javascript: URLs, SVG, ANSI
# and bidi escapes, a NUL, a 200 kB line; in code, output, id and error.
hostile() {
	jq -nc '{id: "xss-1", language: "python", status: "error", exit_code: 1,
		code: "print(\"<script>window.__pwned=true</script>\")\n\"><img src=x onerror=window.__pwned=true>",
		stdout: ("<img src=x onerror=window.__pwned=true>\n\u001b[31mred\u001b[0m <svg onload=window.__pwned=true>\n<a href=\"javascript:window.__pwned=true\">x</a>\u202eevil\u0000\n" + ("A" * 200000)),
		stderr: "</pre><script>window.__pwned=true</script>",
		error: "\"><iframe src=javascript:window.__pwned=true>",
		duration_ms: 12.5, started_at: (now | todate)}'
}

@test "dashboard: no sign-in is 401 with the form; a foreign Origin or Host is 403; a bad token is 401" {
	http_serve
	req GET /
	[ "$code" = 401 ]
	grep -q '<form id="login" method="post" action="/login">' body
	[[ "$(hdr www-authenticate)" == Bearer* ]]
	req GET /runs.json
	[ "$code" = 401 ]
	jq -e .error body
	req GET / -H "Authorization: Bearer nope-nope-nope-nope-nope"
	[ "$code" = 401 ]
	req GET / -H "Authorization: Bearer $TOKEN" -H "Origin: http://evil.example"
	[ "$code" = 403 ]
	req GET / -H "Authorization: Bearer $TOKEN" -H "Host: evil.example"
	[ "$code" = 403 ]
	# an [http] origins entry may call /mcp, but gets no page and no sign-in
	http_stop
	set_key origins '["http://app.example"]'
	http_serve
	req POST /login -H "Origin: http://app.example" --data-urlencode "token=$TOKEN"
	[ "$code" = 403 ]
	[ -z "$(hdr set-cookie)" ]
	# wrong tokens are metered (5, then 429), a right one still gets in;
	# the six from one curl, so that a slow machine does not refill the
	# bucket (a second) between them
	wrong=()
	for i in 1 2 3 4 5 6; do
		wrong+=(--next -sS -o /dev/null -D "headers$i" -w '%{http_code}\n' -H "Authorization: Bearer tok-wrong-wrong-wrong-$i" "$URL/")
	done
	codes=$(curl "${wrong[@]:1}" | tr '\n' ' ')
	[ "$codes" = "401 401 401 401 401 429 " ] || { echo "$codes" >&2; false; }
	grep -qi '^retry-after: [1-9]' headers6
	# a path past the request's own bound is no page
	req GET "/runs/$(printf '0%.0s' $(seq 60))5" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 404 ]
	req GET / -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	[ "$(hdr content-security-policy)" = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'" ]
	[ "$(hdr x-frame-options)" = DENY ]
	[ "$(hdr referrer-policy)" = same-origin ]
	[ "$(hdr cache-control)" = no-store ]
	# no inline script, no inline style: what the policy allows is all it needs
	! grep -q '<script>' body || false
	! grep -q ' style=' body || false
	grep -q '<script src="/static/dash.js" defer></script>' body
	req GET /static/dash.js
	[ "$code" = 200 ]
	[[ "$(hdr content-type)" == text/javascript* ]]
	req GET /static/nope.js
	[ "$code" = 404 ]
}

@test "dashboard: sign-in sets an HttpOnly, SameSite=Strict session cookie (not the token) and redirects; sign-out ends it" {
	http_serve
	req POST /login --data-urlencode "token=$TOKEN"
	[ "$code" = 303 ]
	[ "$(hdr location)" = / ]
	cookie=$(hdr set-cookie)
	[[ $cookie =~ ^sbx_dash=[0-9a-f]{32}\;\ Path=/\;\ HttpOnly\;\ SameSite=Strict\;\ Max-Age=[0-9]+$ ]]
	[[ $cookie != *"$TOKEN"* ]]
	sid=${cookie%%;*}
	req GET /sessions -H "Cookie: $sid"
	[ "$code" = 200 ]
	grep -q '<h1>Sessions</h1>' body
	# a wrong token: 401 and the form says why; nothing is set
	req POST /login --data-urlencode "token=tok-wrong-wrong-wrong-wrong"
	[ "$code" = 401 ]
	[ -z "$(hdr set-cookie)" ]
	grep -q 'id="login-error"' body
	# a GET never signs in, nor out
	req GET "/login?token=$TOKEN"
	[ "$code" = 200 ]
	[ -z "$(hdr set-cookie)" ]
	req GET /logout -H "Cookie: $sid"
	[ "$code" = 405 ]
	req GET / -H "Cookie: $sid"
	[ "$code" = 200 ]
	# a form posted from another site is refused at the door
	req POST /logout -H "Cookie: $sid" -H "Origin: http://evil.example"
	[ "$code" = 403 ]
	req POST /logout -H "Cookie: $sid"
	[ "$code" = 303 ]
	[ "$(hdr location)" = /login ]
	[[ "$(hdr set-cookie)" == "sbx_dash=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0" ]]
	req GET / -H "Cookie: $sid"
	[ "$code" = 401 ]
	# a planted second cookie neither locks out nor swaps the view; a
	# proxy's Basic header leaves the cookie in charge
	req POST /login --data-urlencode "token=$TOKEN2"
	sid2=$(hdr set-cookie)
	sid2=${sid2%%;*}
	req POST /login --data-urlencode "token=$TOKEN"
	sid=$(hdr set-cookie)
	sid=${sid%%;*}
	req GET / -H "Cookie: sbx_dash=0123456789abcdef0123456789abcdef; $sid"
	[ "$code" = 200 ]
	req GET / -H "Cookie: $sid2; $sid"
	[ "$code" = 401 ]
	req GET / -H "Cookie: $sid" -H "Authorization: Basic dXNlcjpwYXNz"
	[ "$code" = 200 ]
	# behind a TLS proxy the browser's origin is https://HOST
	req GET / -H "Cookie: $sid" -H "Origin: ${URL/http:/https:}"
	[ "$code" = 200 ]
	# pages are read-only
	req POST / -H "Authorization: Bearer $TOKEN"
	[ "$code" = 405 ]
	[ "$(hdr allow)" = "GET, HEAD" ]
	# neither the token nor the cookie is in the access log
	! grep -qF "$TOKEN" srv.log || false
	! grep -qF "${sid#sbx_dash=}" srv.log || false
	grep -q '"POST /login" 303' srv.log
}

@test "dashboard: a token sees its own runs (MCP over HTTP), another token none of them" {
	http_serve
	body=$(jq -nc '{jsonrpc: "2.0", id: 1, method: "tools/call", params: {name: "run_code", arguments: {language: "bash", code: "echo mine-123"}}}')
	init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'
	req POST /mcp -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' --data-binary "$init"
	sid=$(hdr mcp-session-id)
	req POST /mcp -H "Authorization: Bearer $TOKEN" -H "Mcp-Session-Id: $sid" -H 'Content-Type: application/json' \
		-H 'Accept: application/json' --data-binary "$body"
	[ "$code" = 200 ]
	hid=$(jq -r '.result.structuredContent.history_id' body)
	[[ $hid =~ ^[0-9]+$ ]]
	req GET /runs -H "Authorization: Bearer $TOKEN"
	grep -q "href=\"/runs/$hid\"" body
	req GET "/runs/$hid" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -q 'mine-123' body
	req GET /runs -H "Authorization: Bearer $TOKEN2"
	! grep -q "href=\"/runs/$hid\"" body || false
	req GET "/runs/$hid" -H "Authorization: Bearer $TOKEN2"
	[ "$code" = 404 ]
	req GET /runs.json -H "Authorization: Bearer $TOKEN2"
	[ "$(jq length body)" = 0 ]
	# with dashboard = "all" every token sees every run
	http_stop
	set_key dashboard '"all"'
	http_serve
	req GET "/runs/$hid" -H "Authorization: Bearer $TOKEN2"
	[ "$code" = 200 ]
}

# mcp TOKEN JSON: one request over Streamable HTTP in the session $MSID
# (made by the first call), the answer in ./body.
mcp() {
	local extra=()
	[ -n "${MSID:-}" ] && extra=(-H "Mcp-Session-Id: $MSID")
	req POST /mcp -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' "${extra[@]}" --data-binary "$2"
	[ -n "${MSID:-}" ] || MSID=$(hdr mcp-session-id)
}

@test "dashboard: a token's live sandbox sessions with their files and processes; another token's are not shown" {
	http_serve
	MSID=
	mcp "$TOKEN" '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bats","version":"1"}}}'
	mcp "$TOKEN" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_initialize","arguments":{"language":"python"}}}'
	sess=$(jq -r '.result.structuredContent.session_id' body)
	[[ $sess =~ ^[0-9a-f]{32}$ ]]
	mcp "$TOKEN" "$(jq -nc --arg s "$sess" '{jsonrpc:"2.0",id:2,method:"tools/call",params:{name:"write_file",arguments:{session_id:$s,path:"notes/<b>.txt",content:"hello"}}}')"
	[ "$code" = 200 ]
	mcp "$TOKEN" "$(jq -nc --arg s "$sess" '{jsonrpc:"2.0",id:3,method:"tools/call",params:{name:"process_start",arguments:{session_id:$s,command:["sleep","321"]}}}')"
	[ "$code" = 200 ]
	req GET /sessions -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -q 'id="live-sessions"' body
	grep -q ">$sess</a>" body
	grep -q '<code>notes/&lt;b&gt;.txt</code>' body
	grep -q '<span class="st st-success">running</span> <code>sleep 321</code>' body
	req GET /sessions -H "Authorization: Bearer $TOKEN2"
	! grep -q "$sess" body || false
	grep -q 'No sandbox session is open' body
}

# bats test_tags=valgrind
@test "dashboard: filters and keyset paging through 120 runs, none twice; live rows after an id" {
	set_key dashboard '"all"'
	for i in $(seq 1 120); do
		jq -nc --arg i "$i" '{id: ("p" + $i), language: (if ($i | tonumber) % 3 == 0 then "bash" else "python" end),
			status: "success", code: ("echo page-" + $i), duration_ms: 1, started_at: (1790000000 + ($i | tonumber) | todate)}'
	done > runs.jsonl
	"$BIN/sbx-log" -c "$conf" < runs.jsonl > /dev/null
	http_serve
	seen=()
	next=/runs
	for page in 1 2 3; do
		req GET "$next" -H "Authorization: Bearer $TOKEN"
		[ "$code" = 200 ]
		mapfile -t ids < <(grep -o 'href="/runs/[0-9]*"' body | grep -o '[0-9]*')
		seen+=("${ids[@]}")
		next=$(grep -o 'id="older" href="[^"]*"' body | sed 's/.*href="//; s/"$//; s/&amp;/\&/g')
		[ "$page" = 3 ] || [ -n "$next" ]
	done
	[ -z "$next" ]
	[ "${#seen[@]}" -eq 120 ]
	[ "$(printf '%s\n' "${seen[@]}" | sort -u | wc -l)" -eq 120 ]
	# newest first: p120 first
	req GET /runs -H "Authorization: Bearer $TOKEN"
	[ "$(grep -o '>p[0-9]*<' body | head -1)" = '>p120<' ]
	req GET "/runs?language=bash&q=page-1" -H "Authorization: Bearer $TOKEN"
	mapfile -t names < <(grep -o '>p[0-9]*<' body | tr -d '<>')
	[ "${#names[@]}" -gt 0 ]
	for n in "${names[@]}"; do [ $((${n#p} % 3)) = 0 ] && [[ ${n#p} == 1* ]]; done
	# LIKE's wildcards are literal
	req GET "/runs?q=%25" -H "Authorization: Bearer $TOKEN"
	grep -q 'No runs match' body
	req GET "/runs.json?after=115" -H "Authorization: Bearer $TOKEN"
	[ "$(jq -c 'map(.id)' body)" = '["p120","p119","p118","p117","p116"]' ]
	req GET "/runs/999999" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 404 ]
	req GET "/runs/abc" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 404 ]
	req GET "/?range=7d" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	req GET "/?range=all" -H "Authorization: Bearer $TOKEN"
	grep -q '<b id="total">120</b>' body
}

@test "dashboard: /runs.html?after=ID is the rows logged after ID, each the runs list's own row; it needs a sign-in" {
	set_key dashboard '"all"'
	log "$(hostile)"
	for i in 1 2 3; do
		log "$(jq -nc --arg i "$i" '{id: ("r-" + $i), language: "python", status: (if $i == "2" then "timeout" else "success" end),
			code: "print(\"\u00e9<b>\")\nx", duration_ms: 1.25, started_at: (now | todate)}')"
	done
	http_serve
	req GET "/runs.html?after=1"
	[ "$code" = 401 ]
	req GET "/runs.html?after=1" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	[[ "$(hdr content-type)" == text/html* ]]
	[ "$(hdr content-security-policy)" = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'" ]
	grep -oP '<tr data-id="\d+">.*?</tr>' body > fragment
	[ "$(grep -o 'data-id="[0-9]*"' fragment | tr '\n' ' ')" = 'data-id="4" data-id="3" data-id="2" ' ]
	! grep -q '<html\|<script' body || false
	req GET /runs -H "Authorization: Bearer $TOKEN"
	grep -oP '<tr data-id="\d+">.*?</tr>' body | head -n 3 > list
	diff list fragment
	grep -q '<span class="st st-timeout">timeout</span>' fragment
	grep -q 'print(&quot;é&lt;b&gt;&quot;)…' fragment
	req GET "/runs.html?after=0" -H "Authorization: Bearer $TOKEN"
	grep -q '&lt;script&gt;window.__pwned' body
	! grep -q '<script>window' body || false
	req GET "/runs.html?after=4" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	[ ! -s body ]
}

# bats test_tags=valgrind
@test "dashboard: the XSS corpus is text on every page, and sbx-history --format html is one inert file" {
	set_key dashboard '"all"'
	log "$(hostile)"
	http_serve
	req GET /runs/1 -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	for f in body; do
		! grep -q '<script>window' "$f" || false
		! grep -q '<img src=x' "$f" || false
		! grep -q '<svg onload' "$f" || false
		! grep -q '<a href="javascript' "$f" || false
		! grep -q '<iframe' "$f" || false
		! grep -q "$(printf '\033')" "$f" || false
		! grep -q "$(printf '\342\200\256')" "$f" || false
	done
	grep -q '&lt;script&gt;window.__pwned=true&lt;/script&gt;' body
	grep -q '&lt;img src=x onerror=window.__pwned=true&gt;' body
	grep -q '␛\[31mred' body
	grep -q '␀' body
	grep -q '<small id="run-id">xss-1</small>' body
	for p in / /runs /sessions "/runs?q=%3Cscript"; do
		req GET "$p" -H "Authorization: Bearer $TOKEN"
		[ "$code" = 200 ]
		! grep -q '<script>window' body || false
		! grep -q '<img src=x' body || false
	done
	run --separate-stderr "$BIN/sbx-history" -c "$conf" --format html
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > o.html
	grep -q '<style>' o.html
	! grep -q '<script' o.html || false
	! grep -qE '(src|href)="(https?:|//)' o.html || false
	! grep -q '<link' o.html || false
	grep -q '&lt;script&gt;' o.html
	run --separate-stderr "$BIN/sbx-history" -c "$conf" --format html --stats
	[ "$status" -eq 2 ]
}

@test "dashboard: a judged run shows its verdict, not status error; limits in human units; list and page say #N" {
	set_key dashboard '"all"'
	log "$(jq -nc '{id: "judged-1", language: "python", code: "print(1)", status: "rejected", exit_code: 0, verdict: "wrong_answer",
		tests_passed: 1, tests_total: 2, duration_ms: 5, limits: {timeout_ms: 10000, memory_bytes: 268435456, cpus: 0.5, pids: 64},
		started_at: (now | todate)}')"
	http_serve
	req GET /runs/1 -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -q '<h1>Run #1 <small id="run-id">judged-1</small></h1>' body
	grep -q '<span class="st st-wrong_answer">wrong_answer</span>' body
	! grep -q 'st-error' body || false
	! grep -q '<dt>status</dt>' body || false
	grep -q '<th>memory_bytes</th><td>256 MiB</td>' body
	grep -q '<th>timeout_ms</th><td>10 s</td>' body
	req GET /runs -H "Authorization: Bearer $TOKEN"
	grep -q '<td class="id"><a href="/runs/1">#1</a> <span class="rid">judged-1</span></td>' body
	grep -q '<td><span class="st st-wrong_answer">wrong_answer</span></td>' body
}

@test "dashboard: a run lists its connections, its compile stage's and tests' too, refused ones with why, a hostile host as text" {
	set_key dashboard '"all"'
	log "$(jq -nc '{id: "inst-1", language: "python", code: "# packages", status: "error", exit_code: 1, duration_ms: 5,
		egress: [{host: "pypi.org", port: 443, allowed: true, bytes_sent: 2048, bytes_received: 1048576, duration_ms: 120.5},
			{host: "<img src=x onerror=alert(1)>", port: 443, allowed: false, why: "<b>not</b> among the registries", bytes_sent: 0,
			 bytes_received: 0, duration_ms: 0.2}], started_at: (now | todate)}')"
	log "$(jq -nc '{id: "judged-1", language: "c", code: "int main(){}", status: "rejected", verdict: "wrong_answer",
		duration_ms: 5, started_at: (now | todate),
		compile: {status: "success", egress: [{host: "cc.example", port: 443, allowed: true, bytes_sent: 1, bytes_received: 1}]},
		tests: [{status: "accepted"}, {status: "wrong_answer", egress: [{host: "t2.example", port: 443, allowed: false,
			why: "t2.example:443 is not in this sandbox'"'"'s network allow-list", bytes_sent: 0, bytes_received: 0}]}]}')"
	http_serve
	req GET /runs/1 -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -q '<h2>Connections</h2><table id="egress">' body
	grep -q '<tr><td>run</td><td>pypi.org</td><td class="num">443</td><td>allowed</td><td class="num">2 KiB</td><td class="num">1 MiB</td>' body
	grep -q '<td>refused: &lt;b&gt;not&lt;/b&gt; among the registries</td>' body
	grep -q '&lt;img src=x onerror=alert(1)&gt;' body
	! grep -q '<img src=x' body || false
	req GET /runs/2 -H "Authorization: Bearer $TOKEN"
	grep -q '<tr><td>compile</td><td>cc.example</td>' body
	grep -q '<tr><td>test 2</td><td>t2.example</td><td class="num">443</td><td>refused: t2.example:443 is not in' body
}

@test "dashboard: images the history kept are shown when their header says a size a browser may decode; a PNG claiming 400 M pixels is not" {
	png=$(python3 -c '
import base64, struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
def png(w, h, idat): return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
print(base64.b64encode(png(1, 1, zlib.compress(b"\0\xff\0\0"))).decode(), base64.b64encode(png(20000, 20000, zlib.compress(b"\0" * 60001))).decode())')
	read -r ok bomb <<< "$png"
	log "$(jq -nc --arg ok "$ok" --arg bomb "$bomb" '{id: "img-1", language: "python", code: "x", status: "success", exit_code: 0,
		duration_ms: 5, started_at: (now | todate), artifacts: [{path: "ok.png", mime_type: "image/png", bytes: 70, content: $ok},
		{path: "bomb.png", mime_type: "image/png", bytes: 150, content: $bomb}]}')"
	set_key dashboard '"all"'
	http_serve
	req GET /runs/1 -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -qF "<img alt=\"\" src=\"data:image/png;base64,$ok\"><figcaption>ok.png</figcaption>" body
	! grep -q 'bomb.png</figcaption>' body || false
	! grep -qF "$bomb" body || false
}

@test "dashboard: a session's command is labelled a command, in its language's environment, not as code of the language" {
	set_key dashboard '"all"'
	log "$(jq -nc '{id: "cmd-1", session: "0123456789abcdef0123456789abcdef", language: "python", command: ["sh", "-c", "make && ./app"],
		code: "sh -c '"'"'make && ./app'"'"'", status: "success", exit_code: 0, duration_ms: 5, started_at: (now | todate)}')"
	log "$(jq -nc '{id: "code-1", language: "python", code: "print(1)", status: "success", exit_code: 0, duration_ms: 5, started_at: (now | todate)}')"
	http_serve
	req GET /runs/1 -H "Authorization: Bearer $TOKEN"
	grep -q '<dt>language</dt><dd><span id="ran">a command</span>, in the environment of python</dd>' body
	grep -q '<h2>Command</h2>' body
	req GET /runs/2 -H "Authorization: Bearer $TOKEN"
	grep -q '<dt>language</dt><dd>python</dd>' body
	grep -q '<h2>Code</h2>' body
	! grep -q 'id="ran"' body || false
}

@test "dashboard in a real browser: sign in, overview, a filtered list, a hostile run inert, a run appearing live, 420 px wide, sign out" {
	command -v "${CHROMIUM:-chromium}" > /dev/null || skip "no Chromium (Debian's chromium package; make deps installs it)"
	[ -d "$ROOT/t/browser/node_modules/puppeteer-core" ] || skip "puppeteer-core is not installed (make mcp-client)"
	set_key dashboard '"all"'
	log "$(hostile)"
	for i in 1 2 3; do log "$(jq -nc --arg i "$i" '{id: ("ok-" + $i), language: "python", status: "success", code: "print(\"<script>\")", stdout: "<script>\n", duration_ms: (10 * ($i | tonumber)), started_at: (now | todate)}')"; done
	http_serve
	mkdir -p shots
	run --separate-stderr node "$ROOT/t/browser/dash.mjs" "$URL" "$TOKEN" 1 "$PWD/shots" "$BIN/sbx-log" -c "$conf"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"1..19"* ]]
	# the screenshots, for doc/ (make dash-shots copies them)
	mkdir -p "$ROOT/build/dash"
	cp shots/*.png "$ROOT/build/dash/"
	[ -s shots/overview.png ]
	[ -s shots/run.png ]
	[ -s shots/runs.png ]
}

@test "dashboard: a session's checkpoints, restores and origin in the sessions table; a run's page names the checkpoint its session came from" {
	set_key dashboard '"all"'
	s=0123456789abcdef0123456789abcdef
	f=fedcba9876543210fedcba9876543210
	"$BIN/sbx-log" -c "$conf" --event "$(jq -nc --arg s "$s" '{kind: "checkpoint", session_id: $s, checkpoint_id: "00000000000000aa"}')"
	"$BIN/sbx-log" -c "$conf" --event "$(jq -nc --arg s "$s" --arg f "$f" '[{kind: "fork", session_id: $f, from_session: $s, checkpoint_id: "00000000000000aa"},
		{kind: "restore", session_id: $s, checkpoint_id: "00000000000000aa"}]')"
	jq -nc --arg s "$s" --arg f "$f" '{id: "c1", language: "python", status: "success", code: "print(1)", duration_ms: 1, session: $s},
		{id: "c2", language: "python", status: "success", code: "print(2)", duration_ms: 1, session: $f}' |
		"$BIN/sbx-log" -c "$conf" > logged.jsonl
	http_serve
	req GET /sessions -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -q '<th>checkpoints</th><th>restores</th><th>forked from</th>' body
	grep -q ">$f</a></td><td>python</td><td class=\"num\">1</td><td class=\"when\">[^<]*</td><td class=\"num\">0</td><td class=\"num\">0</td><td class=\"id\">00000000000000aa</td>" body
	grep -q ">$s</a></td><td>python</td><td class=\"num\">1</td><td class=\"when\">[^<]*</td><td class=\"num\">1</td><td class=\"num\">1</td><td class=\"id\"></td>" body
	req GET "/runs/$(jq -s '.[1].history_id' logged.jsonl)" -H "Authorization: Bearer $TOKEN"
	[ "$code" = 200 ]
	grep -q '<dt>from checkpoint</dt><dd>00000000000000aa</dd>' body || { grep -o '<dl.*</dl>' body | head -c 2000 >&2; false; }
}
