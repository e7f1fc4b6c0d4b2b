#!/usr/bin/env bats
# t/net/internet.bash, the small internet the egress proxy's tests reach:
# proven here from a client's side (in_internet) with the clients the
# proxy carries (curl, pip, npm, git), and from the host's (requests.log,
# the processes and namespaces left after internet_down).  Nothing here
# depends on the kernel beyond network namespaces and veth pairs: no test
# is tagged kernel.
load helpers
load net/internet

local_setup() {
	internet_skip_unless_ready
	internet_unset_host_env
	local t0=$EPOCHREALTIME
	internet_up "$BATS_TEST_TMPDIR"
	# how long set-up took, in ms (one test bounds it)
	echo $(((${EPOCHREALTIME/./} - ${t0/./}) / 1000)) > up.ms
}

teardown() {
	internet_down "$BATS_TEST_TMPDIR"
}

# net CMD...: CMD in a client of the test's internet.
net() { in_internet "$BATS_TEST_TMPDIR" "$@"; }

# logged FILTER: the requests.log lines FILTER (jq, on the whole array)
# keeps, compact.
logged() { jq -sc "$1" "$NET_LOG"; }

@test "names resolve as listed; nx.test does not exist; set-up was quick" {
	net python3 -c '
import socket
for n in ["a.test", "www.a.test", "cdn.test", "b.test", "loop.test", "private.test", "meta.test", "mixed.test", "v6.test", "nx.test"]:
    try:
        print(n, " ".join(sorted({a[4][0] for a in socket.getaddrinfo(n, 443, proto=socket.IPPROTO_TCP)})))
    except socket.gaierror as e:
        print(n, "error", e.errno == socket.EAI_NONAME)' > names
	diff - names <<-ZZZEND
		a.test 198.18.0.5
		www.a.test 198.18.0.5
		cdn.test 198.18.0.5
		b.test 198.18.0.6
		loop.test 127.0.0.1
		private.test 10.1.2.3
		meta.test 169.254.169.254
		mixed.test 10.1.2.3 198.18.0.5
		v6.test fd00::5
		nx.test error True
	ZZZEND
	# the one DNS server, asked over the veth: its log names the client
	grep -q 'query\[A\] nx.test from 100\.64\.' "$NET_DIR/dnsmasq.log"
	[ "$(cat up.ms)" -lt "$(bound 2000 8000)" ]
}

@test "in_internet: a veth into the world is the only way out, resolv.conf names its DNS; the host's are as they were" {
	cp /etc/resolv.conf host-resolv
	ip -o link > host-links
	net sh -c 'ip -o link | cut -d: -f2 | tr -d " " | sed "s/@.*//"; ip route; ip -6 route | grep default | cut -d" " -f1-3; cat /etc/resolv.conf' | sed 's/ *$//' > inside
	diff - inside <<-ZZZEND
		lo
		eth0
		default via 100.64.0.5 dev eth0
		100.64.0.4/30 dev eth0 proto kernel scope link src 100.64.0.6
		default via fd00:64:1::1
		nameserver 198.18.0.53
		options timeout:1 attempts:2
	ZZZEND
	cmp host-resolv /etc/resolv.conf
	ip -o link | diff host-links -
	# two clients at once, each with its own link
	net curl -sS http://a.test/hello > one &
	net curl -sS http://b.test/hello > two
	wait $!
	[ "$(cat one two)" = "hello from a.test via Host a.test
hello from b.test via Host b.test" ]
	[ "$(logged '[.[].client] | unique | length')" = 2 ]
}

@test "HTTPS with the test's CA: the certificate is the one the SNI names, /hello the server and Host" {
	net curl -sS --cacert "$NET_CA" https://a.test/hello https://www.a.test/hello https://cdn.test/hello https://b.test/hello https://198.18.0.5/hello > out
	diff - out <<-ZZZEND
		hello from a.test via Host a.test
		hello from a.test via Host www.a.test
		hello from a.test via Host cdn.test
		hello from b.test via Host b.test
		hello from a.test via Host 198.18.0.5
	ZZZEND
	# each certificate names one host: the name verified is the one sent
	net curl -sS --cacert "$NET_CA" -w '%{certs}' -o /dev/null https://cdn.test/hello | grep -q '^Subject:CN = cdn.test'
	# fronting: the SNI one name, the Host another, each recorded
	[ "$(net curl -sS --cacert "$NET_CA" -H 'Host: a.test' https://cdn.test/hello)" = "hello from a.test via Host a.test" ]
	[ "$(logged '[.[] | select(.path == "/hello") | "\(.addr) \(.sni) \(.host)"]')" = '["198.18.0.5 a.test a.test","198.18.0.5 www.a.test www.a.test","198.18.0.5 cdn.test cdn.test","198.18.0.6 b.test b.test","198.18.0.5 null 198.18.0.5","198.18.0.5 cdn.test cdn.test","198.18.0.5 cdn.test a.test"]' ]
	# a name 198.18.0.5 does not serve gets its address's certificate;
	# without the test's CA nothing is trusted
	run net curl -sS --cacert "$NET_CA" --resolve b.test:443:198.18.0.5 https://b.test/hello
	[ "$status" = 60 ]
	run net curl -sS https://a.test/hello
	[ "$status" = 60 ]
	# a connection with no request is recorded too, and a handshake that
	# failed (once the server sees them end: maybe after the client is over)
	await_lines 9 "$NET_LOG" 5
	[ "$(logged '[.[7:][] | "\(.kind) \(.addr) \(.sni)"] | sort')" = '["no-request 198.18.0.5 b.test","tls 198.18.0.5 a.test"]' ]
}

@test "/big gives n bytes, POST /echo the body, port 8080 answers; requests.log has each, as it reached the server" {
	[ "$(net curl -sS -o /dev/null -w '%{size_download}' 'http://a.test/big?n=3000000')" = 3000000 ]
	[ "$(net curl -sS --cacert "$NET_CA" -o /dev/null -w '%{size_download}' 'https://b.test/big?n=70000')" = 70000 ]
	[ "$(net curl -sS --cacert "$NET_CA" --data-binary 'some bytes' https://a.test/echo)" = "some bytes" ]
	[ "$(net curl -sS http://a.test:8080/hello)" = "hello from a.test via Host a.test:8080" ]
	[ "$(net curl -sS -o /dev/null -w '%{http_code}' http://a.test/nothing)" = 404 ]
	[ "$(logged '[.[] | "\(.kind) \(.addr):\(.port) \(.method) \(.path) \(.sni)"]')" = '["http 198.18.0.5:80 GET /big?n=3000000 null","https 198.18.0.6:443 GET /big?n=70000 b.test","https 198.18.0.5:443 POST /echo a.test","http 198.18.0.5:8080 GET /hello null","http 198.18.0.5:80 GET /nothing null"]' ]
}

@test "the echo port gives back raw bytes; the private, link-local and IPv6 servers answer; loop.test is the client's own" {
	# shellcheck disable=SC2016 # for the client's shell
	[ "$(net bash -c 'exec 5<> /dev/tcp/a.test/7 && printf "raw\0bytes\n" >&5 && head -c 10 <&5 | od -An -c | tr -s " "')" = " r a w \0 b y t e s \n" ]
	[ "$(logged '[.[] | select(.kind == "echo") | .port]')" = '[7]' ]
	[ "$(net curl -sS http://private.test/hello http://meta.test/hello --cacert "$NET_CA" https://v6.test/hello)" = "hello from private.test via Host private.test
hello from meta.test via Host meta.test
hello from v6.test via Host v6.test" ]
	[ "$(logged '[.[] | select(.path == "/hello") | .addr]')" = '["10.1.2.3","169.254.169.254","fd00::5"]' ]
	run net curl -sS http://loop.test/hello
	[ "$status" = 7 ]
}

@test "pip installs sbxdemo from https://a.test/simple/" {
	python3 -m pip --version > /dev/null 2>&1 || skip "no pip for python3 (Debian: python3-pip)"
	net python3 -m pip install -q --disable-pip-version-check --no-cache-dir --no-input \
		--index-url "$NET_PIP_INDEX" --cert "$NET_CA" --target site sbxdemo
	[ "$(PYTHONPATH=site python3 -m sbxdemo)" = "hello from sbxdemo 1.0 (pip)" ]
	[ "$(logged '[.[].path]')" = '["/simple/sbxdemo/","/files/sbxdemo-1.0-py3-none-any.whl"]' ]
}

@test "npm installs sbxdemo from https://a.test/npm/" {
	command -v npm > /dev/null || skip "no npm"
	mkdir proj
	: > npmrc # none of the machine's or user's settings
	net npm install --prefix proj --userconfig npmrc --cache npm-cache --no-audit --no-fund --no-update-notifier \
		--registry "$NET_NPM_REGISTRY" --cafile "$NET_CA" sbxdemo
	[ "$(node proj/node_modules/sbxdemo/index.js)" = "hello from sbxdemo 1.0.0 (npm)" ]
	[ "$(logged '[.[].path]')" = '["/npm/sbxdemo","/npm/sbxdemo/-/sbxdemo-1.0.0.tgz"]' ]
}

@test "git clones https://a.test/git/demo.git" {
	net env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -c http.sslCAInfo="$NET_CA" clone -q "$NET_GIT_REPO" demo
	[ "$(sh demo/hello.sh)" = "hello from demo.git" ]
	[ "$(logged '[.[] | select(.sni == "a.test" and (.path | startswith("/git/demo.git/")))] | length > 3')" = true ]
}

# in_ns INODE: the pids of the processes in that network namespace.
in_ns() {
	stat -L -c '%i %n' /proc/[0-9]*/ns/net 2> /dev/null | awk -v i="$1" '$1 == i { split($2, p, "/"); print p[3] }'
}

@test "internet_down stops what internet_up started and leaves no namespace; twice, and after a failed up" {
	local pids ino t0 p
	pids=$(cut -d' ' -f1 "$NET_DIR"/pids/*)
	[ "$(echo "$pids" | wc -w)" = 3 ] # the world's holder, dnsmasq, server.py
	ino=$(stat -L -c %i "/proc/$NET_WORLD_PID/ns/net")
	[ "$(in_ns "$ino" | sort -n | tr '\n' ' ')" = "$(echo "$pids" | sort -n | tr '\n' ' ')" ]
	t0=$EPOCHREALTIME
	internet_down "$BATS_TEST_TMPDIR"
	echo "internet_down: $(((${EPOCHREALTIME/./} - ${t0/./}) / 1000)) ms" >&3
	for p in $pids; do ! kill -0 "$p" 2> /dev/null || false; done
	[ -z "$(in_ns "$ino")" ]
	internet_down "$BATS_TEST_TMPDIR"
	run in_internet "$BATS_TEST_TMPDIR" true
	[ "$status" = 1 ]
	[[ $output = *"no internet under"* ]]
	# an up whose server cannot start fails at once, and leaves nothing
	mkdir other
	NET_PY=false run internet_up "$PWD/other"
	[ "$status" = 1 ]
	[[ $output = *"no server: its process is over"* ]]
	# (its holder and dnsmasq, started before it failed, are over)
	! our_pgrep "" "^(sleep 3600|dnsmasq .*/other/net/)" || false
	internet_down "$PWD/other"
	# and up again where one runs is refused
	internet_up "$BATS_TEST_TMPDIR"
	run internet_up "$BATS_TEST_TMPDIR"
	[ "$status" = 1 ]
	[[ $output = *"has an internet already"* ]]
}
