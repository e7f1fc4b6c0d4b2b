# t/net/internet.bash: a small internet of the test's own, for the tests
# of sbx's egress proxy (lib/sandbox/egress.h), sourced by bats files.
#
#   internet_up DIR      a "world" network namespace with everything below
#                        in it, its files under DIR/net; writes DIR/net/env
#                        (and sources it: the NET_* variables)
#   in_internet DIR CMD  runs CMD (a program, not a shell function) in a
#                        network namespace of its own whose only way out is
#                        a veth pair into the world (its default route), and
#                        a mount namespace whose /etc/resolv.conf names the
#                        world's DNS server: where a test runs sbx-run or
#                        sbx-mcp, so that their proxy resolves and connects
#                        there
#   internet_down DIR    stops what internet_up started (the pids it
#                        recorded in DIR/net/pids, nothing found by name);
#                        safe to call twice, or after a failed internet_up
#   internet_skip_unless_ready   bats' skip, naming the tools missing
#   internet_unset_host_env      unsets the machine's proxies, CA bundles
#                        and package indexes, which clients would prefer
#
# The world (all of it on its loopback; nothing of the host's network, /etc
# or processes is touched):
#   198.18.0.53      dnsmasq, answering from its own records only:
#                      a.test www.a.test cdn.test  198.18.0.5
#                      b.test                      198.18.0.6
#                      loop.test                   127.0.0.1 (the client's own)
#                      private.test                10.1.2.3
#                      meta.test                   169.254.169.254
#                      mixed.test                  10.1.2.3 and 198.18.0.5
#                      v6.test                     fd00::5 (AAAA only)
#                      flip.test                   198.18.0.5 and 10.1.2.3 in
#                                                  turn, TTL 0 (asked of
#                                                  198.18.0.54: server.py)
#                      anything else (nx.test)     NXDOMAIN
#   198.18.0.5       a.test: HTTP on 80 and 8080, HTTPS on 443 (the cert of
#                    a.test, www.a.test or cdn.test as the SNI asks, else
#                    the one for the address itself), TCP echo on 7, and the
#                    files of NET_PIP_INDEX, NET_NPM_REGISTRY, NET_GIT_REPO
#   198.18.0.6       b.test: HTTP 80, HTTPS 443
#   10.1.2.3, 169.254.169.254, fd00::5   private.test, meta.test, v6.test:
#                    HTTP 80 and HTTPS 443 too, so that an address the proxy
#                    must refuse would have answered (requests.log shows it
#                    never was reached, not that nothing was there)
# Every server answers GET /hello ("hello from NAME via Host HOST"),
# GET /big?n=BYTES (n bytes) and POST /echo (the body), and appends one
# JSON line per request to DIR/net/requests.log (t/net/server.py).  The
# certificates are signed by a CA made for the test, DIR/net/ca.pem, which
# nothing installs: clients are given it (curl --cacert, pip --cert, npm
# --cafile, git -c http.sslCAInfo=).
#
# A client's namespace n (in_internet's nth) is joined to the world by
# veth pair eth0 / w<n>: 100.64.x.y/30 (the shared address space, outside
# the servers' range) and fd00:64:<n>::/64.

NET_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# A Python for the servers: Debian's, where it is (python3 on PATH may be a
# version manager's shim, which takes a tenth of a second to start).
if [ -x /usr/bin/python3 ]; then NET_PY=/usr/bin/python3; else NET_PY=python3; fi

internet_skip_unless_ready() {
	local t missing=
	[ "$(id -u)" = 0 ] || skip "the test's internet needs root (network namespaces)"
	for t in dnsmasq openssl ip unshare nsenter "$NET_PY"; do
		command -v "$t" > /dev/null || missing+=" $t"
	done
	[ -z "$missing" ] || skip "the test's internet needs:$missing (make deps-test: dnsmasq-base, openssl, iproute2, util-linux, python3)"
	# veth pairs join its namespaces: a kernel may lack them (a guest's,
	# whose modules are not loaded), asked in a namespace of its own
	unshare --net ip link add sbxprobe0 type veth peer name sbxprobe1 2> /dev/null ||
		skip "the test's internet needs veth pairs, which this kernel does not make (CONFIG_VETH, module veth)"
}

# _net_start_time PID: its start time (field 22 of /proc/PID/stat, clock
# ticks since boot), which with the pid names one process for good; fails
# for none, or a zombie (a process that is over, only not reaped yet).
_net_start_time() {
	local s
	{ read -r s < "/proc/$1/stat"; } 2> /dev/null || return 1
	s=${s##*) } # the fields after the command's name, which may hold spaces
	# shellcheck disable=SC2086 # split into fields, on purpose
	set -- $s
	[ "$1" != Z ] || return 1
	echo "${20}"
}

# _net_record NAME PID: remember PID as the fixture's NAME, with its start
# time, so that internet_down kills it and never another process that got
# its pid since.
_net_record() {
	echo "$2 $(_net_start_time "$2")" > "$NET_D/pids/$1"
}

# _net_alive FILE: the pid recorded in FILE, if that process still runs.
_net_alive() {
	local pid st
	{ read -r pid st < "$1"; } 2> /dev/null || return 1
	[ -n "$st" ] && [ "$(_net_start_time "$pid")" = "$st" ] && echo "$pid"
}

# _net_await SECONDS WHAT NAME CMD...: until CMD succeeds, polled every
# 10 ms; fails at once if the fixture's process NAME is over (a server that
# could not start is not waited for).
_net_await() {
	local i n=$(($1 * 100)) what=$2 name=$3
	shift 3
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		_net_alive "$NET_D/pids/$name" > /dev/null || { echo "internet_up: no $what: its process is over" >&2; return 1; }
		sleep 0.01
	done
	echo "internet_up: no $what after $1 s" >&2
	return 1
}

_net_in_world_ns() { ! [ "/proc/$1/ns/net" -ef /proc/self/ns/net ]; }
# dnsmasq's UDP socket on port 53, as the world's /proc/net/udp lists it
_net_dns_listens() { grep -q '^ *[0-9]*: [0-9A-F]*:0035 ' "/proc/$1/net/udp"; }

# internet_unset_host_env: forget the machine's settings that would send
# a client elsewhere or make it trust another CA than the one it is given
# on its command line (REQUESTS_CA_BUNDLE beats pip's --cert, GIT_SSL_CAINFO
# git's http.sslCAInfo): its proxies, CA bundles and package indexes.
internet_unset_host_env() {
	unset http_proxy https_proxy all_proxy no_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY \
		SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE GIT_SSL_CAINFO GIT_SSL_CAPATH \
		PIP_CERT PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS NODE_EXTRA_CA_CERTS \
		npm_config_registry NPM_CONFIG_REGISTRY npm_config_cafile NPM_CONFIG_CAFILE
}

internet_up() {
	local d world pid n
	mkdir -p "$1/net/pids" "$1/net/certs" || return 1
	d=$(cd "$1/net" && pwd) || return 1 # absolute: the servers' files name it
	if [ -n "$(_net_alive "$d/pids/world")" ]; then
		echo "internet_up: $1 has an internet already" >&2
		return 1
	fi
	NET_D=$d
	: > "$d/requests.log"
	# The world: a namespace held by a process that does nothing else.  At
	# most an hour: a test killed before its teardown leaves it that long.
	# (Every background process has its output in a file and fd 3 closed,
	# or bats would wait for it.)
	unshare --net -- sleep 3600 < /dev/null > /dev/null 2>&1 3>&- &
	world=$!
	_net_record world "$world"
	# The certificates meanwhile, in the background too (their openssl
	# processes are short-lived and awaited below, not recorded).
	_net_certs "$d" > "$d/certs.log" 2>&1 3>&- &
	pid=$!
	_net_await 5 "world namespace" world _net_in_world_ns "$world" || { internet_down "$1"; return 1; }
	# The servers' addresses, on the world's loopback (local to it, reached
	# from every client through its default route).
	{
		echo "link set lo up"
		for n in 198.18.0.5 198.18.0.6 198.18.0.53 198.18.0.54 10.1.2.3 169.254.169.254; do echo "addr add $n/32 dev lo"; done
		[ ! -d /proc/sys/net/ipv6 ] || echo "addr add fd00::5/128 dev lo nodad"
	} | nsenter --net="/proc/$world/ns/net" ip -batch - || { internet_down "$1"; return 1; }
	_net_dnsmasq_conf "$d" > "$d/dnsmasq.conf"
	nsenter --net="/proc/$world/ns/net" dnsmasq --keep-in-foreground --no-resolv --no-hosts \
		--conf-file="$d/dnsmasq.conf" --pid-file="$d/dnsmasq.pid" < /dev/null >> "$d/dnsmasq.log" 2>&1 3>&- &
	_net_record dns $!
	_net_listeners > "$d/listeners"
	_net_git "$d/www/git/demo.git" > "$d/git.log" 2>&1 || { cat "$d/git.log" >&2; internet_down "$1"; return 1; }
	wait "$pid" || { cat "$d/certs.log" >&2; internet_down "$1"; return 1; }
	rm -f "$d/server.ready"
	nsenter --net="/proc/$world/ns/net" "$NET_PY" "$NET_HERE/server.py" "$d" < /dev/null >> "$d/server.log" 2>&1 3>&- &
	_net_record server $!
	if ! _net_await 10 "server" server test -e "$d/server.ready" ||
		! _net_await 5 "DNS server" dns _net_dns_listens "$world"; then
		cat "$d/server.log" "$d/dnsmasq.log" >&2
		internet_down "$1"
		return 1
	fi
	printf 'nameserver 198.18.0.53\noptions timeout:1 attempts:2\n' > "$d/resolv.conf"
	{
		printf 'NET_DIR=%q\n' "$d"
		printf 'NET_CA=%q\n' "$d/ca.pem"
		printf 'NET_LOG=%q\n' "$d/requests.log"
		printf 'NET_WORLD_PID=%q\n' "$world"
		cat <<-'ZZZEND'
			NET_DNS=198.18.0.53
			NET_A=198.18.0.5
			NET_B=198.18.0.6
			NET_PRIVATE=10.1.2.3
			NET_META=169.254.169.254
			NET_V6=fd00::5
			NET_ECHO_PORT=7
			NET_ALT_PORT=8080
			NET_PIP_INDEX=https://a.test/simple/
			NET_NPM_REGISTRY=https://a.test/npm/
			NET_GIT_REPO=https://a.test/git/demo.git
		ZZZEND
	} > "$d/env"
	# shellcheck source=/dev/null
	. "$d/env"
}

# What each server listens on (t/net/server.py's listeners file).
_net_listeners() {
	cat <<-'ZZZEND'
		http 198.18.0.5 80 a.test
		https 198.18.0.5 443 a.test 198.18.0.5,a.test,www.a.test,cdn.test
		http 198.18.0.5 8080 a.test
		echo 198.18.0.5 7 a.test
		flip 198.18.0.54 53 flip.test 198.18.0.5,10.1.2.3
		http 198.18.0.6 80 b.test
		https 198.18.0.6 443 b.test b.test
		http 10.1.2.3 80 private.test
		https 10.1.2.3 443 private.test private.test
		http 169.254.169.254 80 meta.test
		https 169.254.169.254 443 meta.test meta.test
	ZZZEND
	[ ! -d /proc/sys/net/ipv6 ] || printf '%s\n' "http fd00::5 80 v6.test" "https fd00::5 443 v6.test v6.test"
}

_net_dnsmasq_conf() {
	cat <<-ZZZEND
		# internet_up's: the world's only DNS server, on its address only
		port=53
		listen-address=198.18.0.53
		bind-interfaces
		# root, which it stays in the world's namespace: its log is in the
		# test's directory, which only root can reach
		user=root
		log-facility=$1/dnsmasq.log
		log-queries
		host-record=a.test,198.18.0.5
		host-record=www.a.test,198.18.0.5
		host-record=cdn.test,198.18.0.5
		host-record=b.test,198.18.0.6
		host-record=loop.test,127.0.0.1
		host-record=private.test,10.1.2.3
		host-record=meta.test,169.254.169.254
		host-record=mixed.test,10.1.2.3
		host-record=mixed.test,198.18.0.5
		host-record=v6.test,fd00::5
		# a name that rebinds: asked of server.py's DNS each time
		server=/flip.test/198.18.0.54
		no-negcache
		# no upstream: every other name does not exist
		address=/#/
	ZZZEND
}

# _net_certs NETDIR: the test's CA (NETDIR/ca.pem) and a certificate for
# each server name, and one for a.test's address, all with one key (EC:
# made in a millisecond), made in parallel.
_net_certs() {
	local c=$1/certs n pids=() rc=0
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-keyout "$c/ca.key" -out "$1/ca.pem" -subj "/CN=sbx t-net test CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" || return 1
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$c/key.pem" || return 1
	for n in 198.18.0.5 a.test www.a.test cdn.test b.test private.test meta.test v6.test; do
		case $n in [0-9]*) san=IP:$n ;; *) san=DNS:$n ;; esac
		openssl req -x509 -new -key "$c/key.pem" -CA "$1/ca.pem" -CAkey "$c/ca.key" -days 2 \
			-subj "/CN=$n" -addext "subjectAltName=$san" -addext "basicConstraints=critical,CA:FALSE" \
			-addext "extendedKeyUsage=serverAuth" -out "$c/$n.pem" &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || rc=1; done
	return "$rc"
}

# _net_git REPO: a bare repository with one commit (README and hello.sh on
# main), served as files: git's "dumb" HTTP protocol, after
# update-server-info.  Made with plumbing, out of reach of any git
# configuration of the machine's or the user's.
_net_git() ( # (a subshell: the variables stay in it)
	g=$1
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
	export GIT_AUTHOR_NAME=sbx GIT_AUTHOR_EMAIL=sbx@a.test GIT_COMMITTER_NAME=sbx GIT_COMMITTER_EMAIL=sbx@a.test
	export GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'
	git init -q --bare "$g" &&
		blob1=$(echo "demo: sbx's test repository (t/net)" | git -C "$g" hash-object -w --stdin) &&
		blob2=$(printf '#!/bin/sh\necho hello from demo.git\n' | git -C "$g" hash-object -w --stdin) &&
		tree=$(printf '100644 blob %s\tREADME\n100755 blob %s\thello.sh\n' "$blob1" "$blob2" | git -C "$g" mktree) &&
		commit=$(git -C "$g" commit-tree -m demo "$tree") &&
		git -C "$g" update-ref refs/heads/main "$commit" &&
		git -C "$g" symbolic-ref HEAD refs/heads/main &&
		git -C "$g" update-server-info
)

in_internet() {
	local d=$1/net world n=1 hex
	shift
	world=$(_net_alive "$d/pids/world") || { echo "in_internet: no internet under $d (internet_up?)" >&2; return 1; }
	# this client's number: the first free one (O_EXCL, through noclobber)
	mkdir -p "$d/clients"
	until (set -C && : > "$d/clients/$n") 2> /dev/null; do n=$((n + 1)); done
	[ "$n" -lt 16384 ] || { echo "in_internet: out of client addresses" >&2; return 1; }
	printf -v hex %x "$n"
	# (the veth pair goes with the client's namespace: nothing to undo)
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --net --mount --propagation private -- bash -c '
		set -e
		d=$1 world=$2 n=$3 hex=$4
		shift 4
		a=$((n * 4 >> 8)) b=$((n * 4 & 255))
		v6=false
		[ ! -d /proc/sys/net/ipv6 ] || v6=true
		ip link add eth0 type veth peer name "w$n" netns "$world"
		{
			echo "addr add 100.64.$a.$((b + 1))/30 dev w$n"
			! $v6 || echo "addr add fd00:64:$hex::1/64 dev w$n nodad"
			echo "link set w$n up"
		} | nsenter --net="/proc/$world/ns/net" ip -batch -
		{
			echo "link set lo up"
			echo "addr add 100.64.$a.$((b + 2))/30 dev eth0"
			! $v6 || echo "addr add fd00:64:$hex::2/64 dev eth0 nodad"
			echo "link set eth0 up"
			echo "route add default via 100.64.$a.$((b + 1))"
			! $v6 || echo "route add default via fd00:64:$hex::1"
		} | ip -batch -
		mount --bind "$d/resolv.conf" /etc/resolv.conf
		exec "$@"' in_internet "$d" "$world" "$n" "$hex" "$@"
}

internet_down() {
	local d=$1/net f pid pids=() i left
	[ -d "$d/pids" ] || return 0
	for f in "$d/pids"/*; do
		[ -f "$f" ] || continue
		if pid=$(_net_alive "$f"); then
			kill -TERM "$pid" 2> /dev/null && pids+=("$pid")
		fi
	done
	# until they are over (a zombie is: it holds no namespace), for at most
	# 5 s, then killed
	for ((i = 0; i < 500; i++)); do
		left=
		for pid in "${pids[@]}"; do
			if _net_start_time "$pid" > /dev/null; then left+=" $pid"; fi
		done
		[ -n "$left" ] || break
		sleep 0.01
	done
	# shellcheck disable=SC2086 # one word per pid
	[ -z "$left" ] || kill -KILL $left 2> /dev/null
	# reaped, where they are this shell's children (else wait says so)
	for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
	rm -f "$d/pids"/*
	return 0
}
