#!/usr/bin/env bats
# Background jobs (a session's processes, sbx-mcp's process_start) at
# sbx-run's level: input, signals and a terminal's size through --control,
# all of the output as --live events, no -j slot and no session turn
# taken, the end of a session or of sbx-run ending them; and the fields
# sbx-validate checks (background, tty, env, cwd).
load helpers

teardown() {
	exec 7>&- 6>&- 2> /dev/null || true
	[ -z "${RUN_PID:-}" ] || { kill "$RUN_PID" 2> /dev/null; wait "$RUN_PID" 2> /dev/null || true; }
	assert_no_leftovers
}

# bg_run [SBX-RUN-OPTION...] < requests: sbx-validate's jobs of them to a
# sbx-run in the background (not in a pipeline: this shell keeps it), its --control on fd 7 (a FIFO this test holds
# open: ctl LINE writes one), its events in ev, results in out.
bg_run() {
	"$BIN/sbx-validate" -c "$conf" > jobs
	mkfifo ctl
	exec 7<> ctl
	"$BIN/sbx-run" -c "$conf" --unordered --events 8 --live --control 7 "$@" < jobs > out 8> ev 2> err &
	RUN_PID=$!
}
ctl() { printf '%s\n' "$1" >&7; }
# bg_serve [SBX-RUN-OPTION...]: as bg_run, but requests come later, from
# send LINE... (a FIFO on fd 6, through sbx-validate).
bg_serve() {
	mkfifo ctl in
	exec 7<> ctl 6<> in
	# (sbx-validate opens the FIFO for reading only, and neither keeps our
	# writers: a reader that holds a writer never sees the end)
	"$BIN/sbx-validate" -c "$conf" < in 6<&- 7<&- | "$BIN/sbx-run" -c "$conf" --unordered --events 8 --live --control 7 "$@" 6<&- > out 8> ev 2> err &
	RUN_PID=$!
}
send() { printf '%s\n' "$@" >&6; }
# result ID FILTER: job ID's result in out satisfies FILTER (else the
# result is shown).
result() {
	jq -se --arg id "$1" "map(select(.id == \$id))[0] | $2" out > /dev/null ||
		{ jq -c --arg id "$1" 'select(.id == $id) | {id, status, stdout, stderr, error, duration_ms}' out >&2; return 1; }
}
# await_ev JQ [SECONDS]: until an event satisfies JQ (default 30 s).
await_ev() {
	local i
	for ((i = 0; i < ${2:-30} * 20; i++)); do
		jq -e "select($1)" ev > /dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "no event $1 in: $(cat ev)" >&2
	return 1
}
# The output events of job ID joined.
ev_text() { jq -sj --arg id "$1" 'map(select(.id == $id and .event == "output") | .data // "") | join("")' ev; }
finish() {
	exec 7>&- 6>&-
	wait "$RUN_PID" || true
	RUN_PID=
}

setup_file() {
	export SID=$(printf '%032x' 26)
}

local_session() {
	ws=$BATS_TEST_TMPDIR/var/sessions/$SID
	mkdir -p "$ws/.deps" "$ws/sub/dir"
	local owner
	owner=$(id -u)
	[ "$owner" = 0 ] && owner=$SBX_PROG_UID
	chown -R "$owner:$owner" "$ws"
}

# bats test_tags=kernel
@test "a background job: input through --control, all its output as it comes, its result when it ends" {
	conf=$(conf_with 's/^$//')
	jq -nc '{id: "p", language: "bash", background: true,
		code: "echo ready; while read -r l; do echo \"got $l\"; done; echo bye >&2; exit 4"}' > reqs
	bg_run < reqs
	await_ev '.id == "p" and .event == "output" and (.data | contains("ready"))'
	ctl '{"input": "p", "data": "one\n"}'
	await_ev '.event == "output" and (.data // "" | contains("got one"))'
	ctl '{"input": "p", "data": "two\n", "eof": true}'
	finish
	jq -e '.id == "p" and .status == "error" and .exit_code == 4 and .stdout == "ready\ngot one\ngot two\n" and .stderr == "bye\n"' out
	ev_text p > text
	printf 'ready\ngot one\ngot two\nbye\n' | diff - text
	# its input after the end: refused, said as an event
	jq -e 'select(.event == "done") | .status == "error"' ev
}

@test "background jobs take no -j slot and no session turn; cancel ends one" {
	conf=$(conf_with 's/^$//')
	local_session
	{
		jq -nc --arg s "$SID" '{id: "bg", language: "bash", session: $s, background: true, command: ["sleep", "300"]}'
		jq -nc --arg s "$SID" '{id: "a", language: "bash", session: $s, code: "echo a"}'
		jq -nc '{id: "b", language: "bash", code: "echo b"}'
	} > reqs
	bg_run -j 1 < reqs
	# a and b end while bg runs, with one slot and a's session busy
	await_lines 2 out
	[ "$(jq -sc 'map(.id) | sort' out)" = '["a","b"]' ]
	await_program 'sleep 300'
	ctl '{"cancel": "bg"}'
	finish
	jq -se 'map(select(.id == "bg"))[0] | .status == "cancelled"' out
}

# bats test_tags=kernel
@test "a terminal: the program's own, its size, a prompt answered, a resize, ^C written to it" {
	conf=$(conf_with 's/^$//')
	code='import os, signal, sys
print("tty", os.isatty(0), os.isatty(1), os.isatty(2), os.get_terminal_size(), os.getsid(0) == os.getpgrp() == os.tcgetpgrp(0))
signal.signal(signal.SIGWINCH, lambda *a: print("winch", os.get_terminal_size(), flush=True))
name = input("name? ")
print("hi", name, file=sys.stderr)
try:
    while True:
        signal.pause()
except KeyboardInterrupt:
    print("interrupted")'
	jq -nc --arg c "$code" '{id: "t", language: "python", background: true, tty: {rows: 30, cols: 100}, code: $c}' > reqs
	bg_run < reqs
	await_ev '.event == "output" and (.data // "" | contains("name? "))'
	ctl '{"input": "t", "data": "Ann\n"}'
	await_ev '.event == "output" and (.data // "" | contains("hi Ann"))'
	ctl '{"resize": "t", "rows": 40, "cols": 120}'
	await_ev '.event == "output" and (.data // "" | contains("winch"))'
	ctl '{"input": "t", "data": "\u0003"}'
	finish
	jq -e '.status == "success" and .stderr == "" and .stdout_bytes == (.stdout | length)' out
	out=$(jq -r .stdout out)
	# one stream, as a terminal shows it: lines end \r\n, the input echoed
	[[ $out == *"tty True True True os.terminal_size(columns=100, lines=30) True"$'\r\n'* ]]
	[[ $out == *"name? Ann"$'\r\n'"hi Ann"$'\r\n'* ]]
	[[ $out == *"winch os.terminal_size(columns=120, lines=40)"$'\r\n'* ]]
	[[ $out == *"^Cinterrupted"$'\r' ]] # (the last \n: $() took it)
}

# bats test_tags=kernel
@test "signals reach the program's process group, named from the list only; KILL ends it" {
	conf=$(conf_with 's/^$//')
	jq -nc '{id: "s", language: "bash", background: true,
		code: "trap \"echo usr1\" USR1; trap \"echo term\" TERM; sleep 301 & echo ready; while :; do wait; done"}' > reqs
	bg_run < reqs
	await_ev '.event == "output" and (.data // "" | contains("ready"))'
	await_program 'sleep 301'
	ctl '{"signal": "s", "name": "USR1"}'
	await_ev '.event == "output" and (.data // "" | contains("usr1"))'
	# the group: the shell's child got it too (USR1 ends a sleep)
	for _ in $(seq 100); do our_pgrep "" 'sleep 301' > /dev/null || break; sleep 0.05; done
	! our_pgrep "" 'sleep 301' || false
	ctl '{"signal": "s", "name": "SEGV"}'
	await_ev '.id == "s" and .event == "signal" and (.error | contains("INT, QUIT"))'
	ctl '{"signal": "s", "name": "TERM"}'
	await_ev '.event == "output" and (.data // "" | contains("term"))'
	ctl '{"signal": "s", "name": "SIGKILL"}'
	finish
	jq -e '.status == "error" and .signal == "SIGKILL" and (.stdout | contains("usr1") and contains("term"))' out
}

# bats test_tags=kernel
@test "a session's end and sbx-run's SIGTERM end background jobs: each gets its result, nothing is left" {
	conf=$(conf_with 's/^$//')
	local_session
	{
		jq -nc --arg s "$SID" '{id: "in1", language: "bash", session: $s, background: true, command: ["sleep", "302"]}'
		jq -nc --arg s "$SID" '{id: "in2", language: "python", session: $s, background: true, code: "import time\ntime.sleep(303)"}'
		jq -nc '{id: "out", language: "bash", background: true, code: "sleep 304"}'
	} > reqs
	bg_run < reqs
	await_program 'sleep 302'
	await_program 'sleep 304'
	ctl "{\"end_session\": \"$SID\"}"
	await_lines 2 out
	[ "$(jq -sc 'map([.id, .status]) | sort' out)" = '[["in1","cancelled"],["in2","cancelled"]]' ]
	kill -TERM "$RUN_PID"
	finish || true
	jq -se 'map(select(.id == "out"))[0] | .status == "cancelled"' out
	grep -q 'killing 1 running sandbox' err
}

@test "a flood from a background job: events at a bounded rate, dropped bytes counted, the latest kept" {
	conf=$(conf_with 's/^$//')
	jq -nc '{id: "f", language: "bash", background: true, code: "head -c 300000000 /dev/zero | tr \"\\0\" x; echo; echo END"}' > reqs
	bg_run < reqs
	finish
	jq -e '.status == "success" and .stdout_bytes == 300000005 and (.stdout | endswith("x\nEND\n"))' out
	# every byte accounted for: sent or skipped
	jq -se 'map(select(.event == "output")) | (map(.data // "" | utf8bytelength) | add) + (map(.skipped // 0) | add) == 300000005' ev
	jq -se 'map(select(.event == "output") | .data // "") | join("") | endswith("x\nEND\n")' ev
	# far less than the flood went to the events
	[ "$(stat -c %s ev)" -lt 100000000 ]
}

# bats test_tags=kernel
@test "cwd and env: where a session's program starts, and the variables it gets" {
	conf=$(conf_with 's/^$//')
	local_session
	jq -nc --arg s "$SID" '{id: "c", language: "bash", session: $s, cwd: "sub/dir", env: {GREETING: "hi there", OMP_NUM_THREADS: "3"},
		code: "pwd; echo \"$GREETING\" $OMP_NUM_THREADS"}' | sbx -c "$conf" > out
	jq -e '.status == "success" and .stdout == "/scratch/sub/dir\nhi there 3\n"' out
	jq -nc --arg s "$SID" '{id: "c", language: "bash", session: $s, cwd: "nowhere", command: ["true"]}' | sbx -c "$conf" > out || true
	jq -e '.status == "internal_error" and (.error | contains("nowhere"))' out
}

@test "sbx-validate: background, tty, env and cwd are checked, and a background job's timeout is max_life's" {
	conf=$(conf_with -e 's/^max_life *=.*/max_life = "1h"/')
	{
		py 1 '{background: true}'
		py 1 '{background: true, timeout: 1800}'
		py 1 '{background: true, timeout: 7200}'
		py 1 '{tty: true}'
		py 1 '{background: true, tty: {rows: 0, cols: 80}}'
		py 1 '{background: true, tests: [{stdin: ""}]}'
		py 1 '{background: true, stdin: "x"}'
		py 1 '{env: {"1A": "x"}}'
		py 1 '{env: {A: 1}}'
		py 1 '{cwd: "a"}'
		py 1 '{cwd: "../a", session: "00000000000000000000000000000001"}'
		py 1 '{background: true, tty: true}'
		py 1 '{install: ["x"], env: {NODE_OPTIONS: "--require /scratch/x.js"}, session: "00000000000000000000000000000001"}'
	} | "$BIN/sbx-validate" -c "$conf" > out || true
	run jq -c '[.error, .limits.timeout_ms, .exec.tty]' out
	[ "${lines[0]}" = '[null,3600000,null]' ]
	[ "${lines[1]}" = '[null,1800000,null]' ]
	[[ ${lines[2]} == *'timeout 7200 s exceeds max_life 3600 s'* ]]
	[[ ${lines[3]} == *'\"tty\" goes with \"background\": true'* ]]
	[[ ${lines[4]} == *'whole numbers 1 to 1000'* ]]
	[[ ${lines[5]} == *'\"tests\" does not go with \"background\"'* ]]
	[[ ${lines[6]} == *'\"stdin\" does not go with \"background\"'* ]]
	[[ ${lines[7]} == *'\"1A\" is not a variable name'* ]]
	[[ ${lines[8]} == *'the value of A must be a string'* ]]
	[[ ${lines[9]} == *'give \"session\"'* ]]
	[[ ${lines[10]} == *'\"cwd\" must be a relative path'* ]]
	[ "${lines[11]}" = '[null,3600000,{"rows":24,"cols":80}]' ]
	[[ ${lines[12]} == *'\"env\" does not go with \"install\"'* ]]
	# off: none at all
	conf=$(conf_with -e 's/^max_processes *=.*/max_processes = 0/')
	py 1 '{background: true}' | "$BIN/sbx-validate" -c "$conf" | jq -e '.error | contains("max_processes 0")'
}

@test "at most max_processes background jobs of one session at once" {
	conf=$(conf_with -e 's/^max_processes *=.*/max_processes = 1/')
	local_session
	{
		jq -nc --arg s "$SID" '{id: "one", language: "bash", session: $s, background: true, command: ["sleep", "305"]}'
		jq -nc --arg s "$SID" '{id: "two", language: "bash", session: $s, background: true, command: ["sleep", "306"]}'
	} > reqs
	bg_run < reqs
	await_lines 1 out
	jq -e '.id == "two" and .status == "internal_error" and (.error | contains("max_processes 1 in its session"))' out
	ctl '{"cancel": "one"}'
	finish
}

# A cancel that ends a job at once (one parked on another's compile of the
# same code, which it would share) took it out of the list being walked,
# and the job moved into its place was never cancelled: sbx-run ran on
# after SIGTERM until that job ended by itself (max_life, hours).
@test "sbx-run's SIGTERM ends every background job, one parked on a compile in flight too" {
	command -v gcc > /dev/null || skip "no gcc"
	conf=$(conf_with 's/^$//')
	# seconds of gcc -O2: 2048 statements from a few lines
	{
		echo '#define X0 s += i * 3 ^ (s >> 2);'
		for i in $(seq 11); do echo "#define X$i X$((i - 1)) X$((i - 1))"; done
		echo 'int main(int c, char **v) { unsigned s = c, i = c; X11 return s & 1; }'
	} > main.c
	{
		jq -nc --rawfile c main.c '{id: "a", language: "c", background: true, code: $c}'
		jq -nc --rawfile c main.c '{id: "b", language: "c", background: true, code: $c}'
		jq -nc '{id: "c", language: "bash", background: true, code: "sleep 307"}'
	} > reqs
	bg_run < reqs
	await_program 'sleep 307'
	await_program 'cc1'
	kill -TERM "$RUN_PID"
	for _ in $(seq 100); do kill -0 "$RUN_PID" 2> /dev/null || break; sleep 0.1; done
	if kill -0 "$RUN_PID" 2> /dev/null; then echo "sbx-run still runs 10 s after SIGTERM: $(cat out)" >&2; false; fi
	finish || true
	[ "$(jq -sc 'map([.id, .status]) | sort' out)" = '[["a","cancelled"],["b","cancelled"],["c","cancelled"]]' ]
}

# bats test_tags=kernel
@test "a session's loopback: its runs, cells and processes share it; another session, a stateless run and the host do not" {
	conf=$(conf_with 's/^$//')
	local_session
	other=$(printf '%032x' 27)
	mkdir -p "$BATS_TEST_TMPDIR/var/sessions/$other/.deps"
	chown -R --reference="$ws" "$BATS_TEST_TMPDIR/var/sessions/$other"
	port=$((20000 + RANDOM % 20000))
	srv="import http.server as h
s = h.HTTPServer(('127.0.0.1', $port), h.SimpleHTTPRequestHandler)
print('up', flush=True)
s.serve_forever()"
	get="import urllib.request as u
try:
    r = u.urlopen('http://127.0.0.1:$port/').status
except OSError as e:
    r = type(e.reason).__name__
print(r)"
	bg_serve
	send "$(jq -nc --arg s "$SID" --arg c "$srv" '{id: "srv", language: "python", session: $s, background: true, code: $c}')"
	await_ev '.id == "srv" and .event == "output" and (.data // "" | contains("up"))'
	send "$(jq -nc --arg s "$SID" --arg c "$get" '{id: "same", language: "python", session: $s, code: $c, timeout: 60}')" \
		"$(jq -nc --arg s "$SID" --arg c "${get%print(r)}r" '{id: "cell", language: "python", session: $s, cell: true, code: $c, timeout: 60}')" \
		"$(jq -nc --arg s "$other" --arg c "$get" '{id: "other", language: "python", session: $s, code: $c, timeout: 60}')" \
		"$(jq -nc --arg c "$get" '{id: "none", language: "python", code: $c, timeout: 60}')" \
		"$(jq -nc --arg s "$SID" '{id: "cfg", language: "python", session: $s,
			code: "import fcntl, socket, struct\ns = socket.socket()\ntry:\n    fcntl.ioctl(s, 0x8914, struct.pack(\"16sH14s\", b\"lo\", 0, b\"\"))\n    print(\"changed\")\nexcept OSError as e:\n    print(e.errno)"}')"
	await_lines 5 out
	result same '.stdout == "200\n"'
	result cell '.value == "200"'
	result other '.stdout == "ConnectionRefusedError\n"'
	result none '.stdout == "ConnectionRefusedError\n"'
	# its programs cannot reconfigure it (SIOCSIFFLAGS: EPERM)
	result cfg '.stdout == "1\n"'
	# from the host's side: nothing of it on the host's loopback
	! python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2> /dev/null || false
	# the session's end ends its process and forgets its loopback
	ctl "{\"end_session\": \"$SID\"}"
	await_lines 6 out
	send "$(jq -nc --arg s "$SID" --arg c "$get" '{id: "after", language: "python", session: $s, code: $c, timeout: 60}')"
	await_lines 7 out
	finish
	jq -se 'map(select(.id == "srv"))[0] | .status == "cancelled" and (.stderr | contains("\"GET / HTTP/1.1\" 200"))' out
	result after '.stdout == "ConnectionRefusedError\n"'
}

# bats test_tags=kernel
@test "a session's runs with an allow-list share its loopback too, each with a proxy of its own there" {
	conf=$(conf_with 's/^network *=.*/network = ["allowed.example"]/')
	local_session
	port=$((20000 + RANDOM % 20000))
	# a server that may reach allowed.example, asking its proxy for
	# another host; then a sibling with no network, and one with a list
	ask='import os, socket, urllib.parse
u = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])
s = socket.create_connection((u.hostname, u.port)); s.sendall(b"CONNECT denied.example:443 HTTP/1.1\r\n\r\n")
print(u.port, s.recv(100).split(b"\r\n")[0].decode(), flush=True)'
	srv="$ask
import http.server as h
s = h.HTTPServer(('127.0.0.1', $port), h.SimpleHTTPRequestHandler)
print('up', flush=True)
s.serve_forever()"
	get="import urllib.request as u
print(u.urlopen('http://127.0.0.1:$port/').status)"
	bg_serve
	send "$(jq -nc --arg s "$SID" --arg c "$srv" '{id: "srv", language: "python", session: $s, background: true, network: ["allowed.example"], code: $c}')"
	await_ev '.id == "srv" and .event == "output" and (.data // "" | contains("up"))'
	send "$(jq -nc --arg s "$SID" --arg c "$get" '{id: "plain", language: "python", session: $s, code: $c, timeout: 60}')" \
		"$(jq -nc --arg s "$SID" --arg c "$ask
$get" '{id: "listed", language: "python", session: $s, network: ["allowed.example"], code: $c, timeout: 60}')"
	await_lines 2 out
	ctl "{\"end_session\": \"$SID\"}"
	await_lines 3 out
	finish
	result plain '.stdout == "200\n"'
	# the sibling with a list: its own proxy (another port), refusing as
	# its list says, and the server reached on the shared loopback
	result listed '(.stdout | test("^[0-9]+ HTTP/1.1 403 Forbidden\n200\n$")) and (.egress | length == 1) and .egress[0].host == "denied.example"'
	jq -se 'map(select(.id == "srv"))[0] | (.stdout | test("^[0-9]+ HTTP/1.1 403 Forbidden\nup\n")) and
		(.egress | length == 1 and .[0].allowed == false)' out
	a=$(jq -rs 'map(select(.id == "srv"))[0].stdout | split(" ")[0]' out)
	b=$(jq -r 'select(.id == "listed") | .stdout | split(" ")[0]' out)
	[ "$a" != "$b" ]
}

# bats test_tags=kernel
@test "--connect: a connection to a session's port, made in its loopback and handed over; another port or session, a bad request: why not" {
	conf=$(conf_with 's/^$//')
	local_session
	port=$((20000 + RANDOM % 20000))
	run --separate-stderr python3 "$ROOT/t/fixtures/connect.py" "$BIN" "$conf" "$SID" "$port"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 5 ]
	jq -e '.tag == "open" and .error == null and .fd and .got == "HTTP/1.0 200 OK"' <<< "${lines[0]}"
	jq -e '.tag == "closed" and (.error | test("refused")) and (.fd | not)' <<< "${lines[1]}"
	jq -e '.tag == "other" and (.error | test("nothing runs in the session")) and (.fd | not)' <<< "${lines[2]}"
	jq -e '.tag == "zero" and (.error | test("1 to 65535"))' <<< "${lines[3]}"
	jq -e '.tag == null and (.error | test("a request is"))' <<< "${lines[4]}"
	# from the host's side: the port is in the session's loopback only
	! python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2> /dev/null || false
}
