#!/usr/bin/env bats
# A run's network by allow-list (doc/security.md, Egress): its own network
# namespace with only its loopback, a proxy of its own there, every
# connection in the result's egress.  The proxy's own rules (names,
# ports, TLS, plain HTTP, bounds) against servers of the test's own are in
# the tests below that build a small internet (t/net/internet.bash).

load helpers
load net/internet

# probe.py: every way out a program could try, as JSON on stdout, against
# the host listener (host_listener) and the metadata address.
probe() {
	cat > "$BATS_TEST_TMPDIR/probe.py" <<EOF
import errno, json, os, socket
port, hostip = $LISTEN_PORT, "${HOST_IP:-127.0.0.1}"
out = {"env": {k: os.environ.get(k) for k in ("HTTPS_PROXY", "http_proxy", "ALL_PROXY", "NO_PROXY", "NODE_USE_ENV_PROXY")},
       "interfaces": [n for _, n in socket.if_nameindex()]}
def direct(h, p):
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect((h, p)); return "CONNECTED"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()
out["direct"] = {h: direct(h, port) for h in ("127.0.0.1", hostip, "169.254.169.254")}
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); out["raw"] = "opened"
except OSError as e:
    out["raw"] = errno.errorcode[e.errno]
def via(line):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall((line + "\r\n\r\n").encode())
    b = b""
    while True:
        d = s.recv(4096)
        if not d: break
        b += d
    s.close()
    return b.decode().split("\r\n")[0]
out["via"] = [via(l) for l in ("CONNECT 127.0.0.1:%d HTTP/1.1" % port, "CONNECT %s:%d HTTP/1.1" % (hostip, port),
                               "CONNECT localhost:%d HTTP/1.1" % port,
                               "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254",
                               "CONNECT elsewhere.example:443 HTTP/1.1")]
print(json.dumps(out))
EOF
}

# bats test_tags=kernel
@test "a run with an allow-list: its own loopback, no route, no raw socket; the host's services and metadata refused" {
	host_listener
	ip=${HOST_IP:-127.0.0.1}
	probe
	conf=$(conf_with "s/^network *=.*/network = [\"127.0.0.1:$LISTEN_PORT\", \"$ip:$LISTEN_PORT\", \"localhost:$LISTEN_PORT\", \"169.254.169.254:80\"]/")
	jq -nc --rawfile c probe.py '{language: "python", code: $c, network: true}' | sbx -c "$conf" > out
	kill "$LISTENER"
	jq -e ".status == \"success\"" out || { jq -c . out; false; }
	jq -r .stdout out > probe.json
	jq -e '.env == {HTTPS_PROXY: "http://127.0.0.1:3128", http_proxy: "http://127.0.0.1:3128", ALL_PROXY: "http://127.0.0.1:3128",
	                NO_PROXY: "localhost,127.0.0.1,::1", NODE_USE_ENV_PROXY: "1"}' probe.json
	jq -e '.interfaces == ["lo"]' probe.json
	# its own loopback has nothing there; nothing else is routed
	jq -e --arg ip "$ip" '.direct["127.0.0.1"] == "ECONNREFUSED" and .direct["169.254.169.254"] == "ENETUNREACH" and
		($ip == "127.0.0.1" or .direct[$ip] == "ENETUNREACH")' probe.json
	jq -e '.raw == "EPERM"' probe.json
	jq -e '.via | length == 5 and all(startswith("HTTP/1.1 403") or startswith("HTTP/1.1 502"))' probe.json
	# from the host's side: nothing reached the listener; the proxy says why each was refused
	[ ! -s hits ]
	jq -e '.egress | length == 5 and all(.why | length > 0)' out
	# (the host's address, where it has none but loopback as in a guest,
	# is 127.0.0.1: then three of them)
	jq -e --arg p "$LISTEN_PORT" --arg ip "$ip" '[.egress[] | select(.host == "127.0.0.1" or .host == "localhost")] |
		length == (if $ip == "127.0.0.1" then 3 else 2 end) and
		all(.port == ($p | tonumber) and .allowed and (.why | test("no address a sandbox may reach")))' out
	jq -e '.egress[] | select(.host == "169.254.169.254") | .port == 80 and .allowed and (.why | test("no address"))' out
	jq -e '.egress[] | select(.host == "elsewhere.example") | (.allowed | not) and (.why | test("not in this sandbox.s network allow-list"))' out
}

@test "network on a judged run: each test has its connections; the history finds the refusals" {
	conf=$(conf_with 's/^network *=.*/network = ["allowed.example"]/')
	code='import socket
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"CONNECT denied.example:443 HTTP/1.1\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())'
	jq -nc --arg c "$code" '{id: "judged", language: "python", code: $c, network: true,
		tests: [{expected_stdout: "HTTP/1.1 403 Forbidden"}, {expected_stdout: "HTTP/1.1 403 Forbidden"}]}' |
		sbx -c "$conf" > out
	jq -e '.verdict == "accepted" and (.tests | length == 2)' out
	jq -e '[.tests[].egress | length] == [1, 1] and all(.tests[].egress[0]; .host == "denied.example" and .allowed == false)' out
	# stored with their records and found by what the proxy refused: a
	# judged run's in its tests, a run's own, not one that connected nowhere
	"$BIN/sbx-log" -c "$conf" < out > /dev/null
	jq -nc --arg c "$code" '{id: "plain", language: "python", code: $c, network: ["allowed.example"]}' | sbx -c "$conf" |
		"$BIN/sbx-log" -c "$conf" > /dev/null
	jq -nc '{id: "quiet", language: "python", code: "print(1)", network: ["allowed.example"]}' | sbx -c "$conf" |
		"$BIN/sbx-log" -c "$conf" > /dev/null
	run --separate-stderr "$BIN/sbx-history" -c "$conf" --egress-refused --record
	[ "$status" -eq 0 ]
	jq -se 'map(.id) | sort == ["judged", "plain"]' <<< "$output" || { jq -c '{id, status, egress: .record.egress}' <<< "$output"; false; }
	jq -se 'map(select(.id == "plain"))[0] | (.record.egress | length == 1) and .record.egress[0].host == "denied.example"' <<< "$output"
}

# ---- against the test's own internet (t/net/internet.bash) --------------

# inet_setup: the internet up, the configuration's list in $conf (names
# of the internet's), the CA in $ca.
inet_setup() {
	internet_skip_unless_ready
	internet_unset_host_env
	internet_up "$BATS_TEST_TMPDIR"
	conf=$(conf_with "s/^network *=.*/network = [\"a.test\", \"*.a.test\", \"a.test:80\", \"a.test:7\", \"loop.test\", \"private.test\", \"meta.test:80\", \"mixed.test\", \"v6.test\", \"nx.test\", \"flip.test:80\"]/")
}
teardown() { [ ! -d "$BATS_TEST_TMPDIR/net" ] || internet_down "$BATS_TEST_TMPDIR"; }

# net_run FIELDS-JQ: a bash request (its code in ./code, the CA as
# ca.pem beside it) through sbx-validate, then sbx-run in a client of the
# internet; the result in ./out.
net_run() {
	jq -nc --rawfile c code --rawfile ca "$NET_CA" "{language: \"bash\", code: \$c, files: {\"ca.pem\": \$ca},
		timeout: 60, memory: \"1g\", pids: 256} + $1" | "$BIN/sbx-validate" -c "$conf" > job
	in_internet "$BATS_TEST_TMPDIR" "$BIN/sbx-run" -c "$conf" < job > out
}
# reached FILTER: requests.log's lines FILTER keeps (jq over the array).
reached() { jq -sc "$1" "$NET_LOG"; }

@test "an allow-list: curl, pip, npm and git reach the host allowed; another host, and no address of this machine's" {
	# (the docker backend's scratch is a tmpfs sbx-run mounts, which
	# dockerd cannot see from in_internet's mount namespace; its proxy is
	# this same process, and the first tests above cover its way there)
	skip_on_docker "the test's internet needs sbx-run in a mount namespace of its own, whose mounts dockerd does not see"
	inet_setup
	cat > code <<'EOF'
c() { code=$(curl -sS --cacert ca.pem -o /dev/null -w '%{http_code}' "${@:2}" 2> /dev/null); echo "$1 $code $?"; }
curl -sS --cacert ca.pem https://a.test/hello; echo
c denied https://b.test/hello
c loop https://loop.test/hello
c private https://private.test/hello
c meta http://meta.test/latest/meta-data/
c v6 https://v6.test/hello
c nx https://nx.test/hello
curl -sSk https://mixed.test/hello; echo
c fronted https://cdn.test/hello --connect-to cdn.test:443:a.test:443
c direct https://a.test/hello --noproxy '*'
python3 -m pip install -q --disable-pip-version-check --no-cache-dir --cert ca.pem --index-url https://a.test/simple/ --target pipdeps sbxdemo > pip.log 2>&1 && PYTHONPATH=pipdeps python3 -c 'import sbxdemo; sbxdemo.hello()' || tail -3 pip.log
npm install -s --no-audit --no-fund --registry https://a.test/npm/ --cafile ca.pem sbxdemo > npm.log 2>&1 && node -e 'console.log(require("sbxdemo")())' || tail -3 npm.log
git -c http.sslCAInfo=ca.pem clone -q https://a.test/git/demo.git 2>&1 && cat demo/README*
for i in $(seq 16); do curl -sS -o /dev/null -w "flip %{http_code}\n" http://flip.test/hello 2> /dev/null; done
EOF
	net_run '{network: true}'
	jq -e ".status == \"success\"" out || { jq -c . out; false; }
	jq -r .stdout out > got
	cat got
	grep -qx 'hello from a.test via Host a.test' got
	grep -qx 'hello from a.test via Host mixed.test' got
	# refused by the proxy (403, 502) or failed on the way (curl's exit)
	for w in denied loop private meta v6 nx fronted direct; do
		awk -v w=$w '$1 == w && ($3 != 0 || $2 == 403 || $2 == 502) { ok = 1 } END { exit !ok }' got
	done
	# each tool installed or cloned, and ran what it got
	grep -qx 'hello from sbxdemo 1.0 (pip)' got
	grep -qx 'hello from sbxdemo 1.0.0 (npm)' got
	grep -qx "demo: sbx's test repository (t/net)" got
	# ... through the proxy, from the index, the registry and the git server
	for p in /simple/ /npm/ /git/demo.git/; do
		reached "[.[] | select(.kind == \"https\" and .sni == \"a.test\" and (.path // \"\" | startswith(\"$p\")))] | length > 0" | grep -qx true
	done
	# a name whose answer changes, looked up once a connection: each
	# connection went where its check said, never to the private address
	# (the proxy asked about 16 times, got both answers, refused half)
	[ "$(grep -c '^flip 200$' got)" -ge 4 ]
	[ "$(grep -cE '^flip (403|502)$' got)" -ge 4 ]
	[ "$(reached '[.[] | select(.kind == "dns" and .answer == "10.1.2.3")] | length')" -ge 4 ]
	reached '[.[] | select(.host == "flip.test")] | map(.addr) | unique' | jq -e '. == ["198.18.0.5"]'
	jq -e '[.egress[] | select(.host == "flip.test")] | (map(select(.why == null)) | length >= 4) and
		(map(select(.why != null)) | length >= 4 and all(.why | test("no address")))' out
	# from the host's side: only a.test's address was reached, and only as named
	[ "$(reached '[.[] | select(.kind != "dns" and .addr != "198.18.0.5")] | length')" = 0 ]
	[ "$(reached '[.[] | select(.sni == "cdn.test")] | length')" = 0 ]
	reached '[.[] | select(.kind == "https")] | map(.sni) | unique' | jq -e '. == ["a.test", "mixed.test"]'
	# and the proxy's side: each refusal with its reason, bytes where it went through
	jq -e '.egress[] | select(.host == "b.test") | .allowed == false and (.why | test("network allow-list"))' out
	for h in loop.test private.test meta.test v6.test; do
		jq -e --arg h "$h" '[.egress[] | select(.host == $h)] | length == 1 and all(.allowed == false or (.why | test("no address")))' out
	done
	jq -e '.egress[] | select(.host == "nx.test") | .why | test("cannot resolve nx.test")' out
	jq -e '[.egress[] | select(.host == "a.test" and .why == null)] | length >= 4 and all(.bytes_sent > 0 and .bytes_received > 0)' out
	jq -e '[.egress[] | select(.host == "a.test" and .why != null)] | any(.why | test("names cdn.test, not a.test"))' out
}

@test "an allow-list run's bounds from the configuration: egress_connections, egress_bytes and egress_rate hold" {
	skip_on_docker "the test's internet needs sbx-run in a mount namespace of its own, whose mounts dockerd does not see"
	inet_setup
	# connections: three go through, the fourth is refused, and said so
	sed -i -e 's/^egress_connections *=.*/egress_connections = 3/' "$conf"
	echo 'for i in 1 2 3 4; do curl -sS -o /dev/null -w "%{http_code}\n" http://a.test/hello 2> /dev/null; done' > code
	net_run '{network: true}'
	jq -e '.stdout | test("^200\n200\n200\n[0-9]+\n$") and (split("\n")[3] != "200")' out
	jq -e '[.egress[] | select(.host == "a.test")] | length == 3' out
	jq -e '[.egress[] | select(.host == null)] | length == 1 and (.[0].why | test("egress_connections"))' out
	[ "$(reached '[.[] | select(.path == "/hello")] | length')" = 3 ]
	# bytes, both ways in all: a 300 KB answer under a 100 KiB bound is cut
	sed -i -e 's/^egress_connections *=.*/egress_connections = 256/' -e 's/^egress_bytes *=.*/egress_bytes = "100k"/' "$conf"
	echo 'curl -sS http://a.test/big?n=300000 2> /dev/null | wc -c; curl -sS -o /dev/null -w "%{http_code}\n" http://a.test/hello' > code
	net_run '{network: true}'
	got=$(jq -r .stdout out | head -1)
	[ "$got" -lt 102400 ]
	jq -e '[.egress[] | select(.why != null)] | any(.why | test("egress_bytes"))' out
	jq -e '[.egress[] | .bytes_sent + .bytes_received] | add <= 102400 + 65536' out
	# rate: 200 KB at 100 KB a second takes its two seconds, and comes whole
	sed -i -e 's/^egress_bytes *=.*/egress_bytes = "1g"/' -e 's/^egress_rate *=.*/egress_rate = "100k"/' "$conf"
	echo 'curl -sS http://a.test/big?n=200000 2> /dev/null | wc -c' > code
	net_run '{network: true}'
	[ "$(jq -r .stdout out)" = 200000 ]
	jq -e '[.egress[] | select(.host == "a.test")][0] | .bytes_received > 200000 and .duration_ms > 1200' out
}

@test "plain HTTP to port 443 is refused: HTTPS goes through CONNECT" {
	skip_on_docker "the test's internet needs sbx-run in a mount namespace of its own, whose mounts dockerd does not see"
	inet_setup
	# a.test (port 443) is listed: a plain request to it would reach
	# port 443 without a ClientHello for the proxy to check
	cat > code <<'EOF'
curl -sS -o /dev/null -w '%{http_code}\n' http://a.test:443/hello
curl -sS -o /dev/null -w '%{http_code}\n' http://a.test/hello
EOF
	net_run '{network: true}'
	jq -e '.status == "success"' out || { jq -c . out; false; }
	[ "$(jq -r .stdout out)" = "$(printf '403\n200')" ]
	# from the host's side: nothing came to port 443; the record says why
	[ "$(reached '[.[] | select(.port == 443)] | length')" = 0 ]
	[ "$(reached '[.[] | select(.port == 80)] | length')" = 1 ]
	jq -e '[.egress[] | select(.port == 443)] | length == 1 and (.[0].allowed | not) and (.[0].why | test("port 443 is HTTPS"))' out
}

@test "a pattern's port is digits only, not what strtoll would also read" {
	conf=$(conf_with 's/^network *=.*/network = ["a.test"]/')
	for p in 'a.test: 443' 'a.test:+443' 'a.test:\n443'; do
		jq -nc --arg p "$p" '{language: "bash", code: "true", network: [$p | gsub("\\\\n"; "\n")]}' |
			"$BIN/sbx-validate" -c "$conf" > v || true
		jq -e '.status == "invalid" and (.error | test("port must be a number"))' v
	done
}
