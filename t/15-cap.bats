#!/usr/bin/env bats
# sbx-cap: head and tail around a marker, never splitting a character.
load helpers

# bats test_tags=valgrind
@test "1 MB of multi-byte output capped at 100 bytes: valid UTF-8, head and tail kept" {
	python3 -c '
import json
s = "é" * 250000 + "€" * 100000 + "END"
print(json.dumps({"id": "x", "status": "success", "stdout": s, "stdout_bytes": len(s.encode()), "stderr": ""}))' > r.jsonl
	run --separate-stderr "$BIN/sbx-cap" -n 100 < r.jsonl
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | python3 -c '
import json, sys, re
r = json.loads(sys.stdin.read())
s = r["stdout"]
m = re.search(r"\n\[\.\.\. (\d+) bytes truncated \.\.\.\]\n", s)
assert m, s
head, tail = s[:m.start()], s[m.end():]
assert head == "é" * 25, head
assert tail.endswith("€END") and set(tail[:-3]) == {"€"}, tail
assert len(head.encode()) + len(tail.encode()) <= 100
assert int(m.group(1)) + len(head.encode()) + len(tail.encode()) == r["stdout_bytes"] == 800003
assert r["stdout_truncated"] is True and r["stdout_bytes"] == 800003
s.encode("utf-8")
'
}

@test "the limit comes from -n, else the record's limits.output_bytes, else the configuration" {
	python3 -c '
import json
print(json.dumps({"stdout": "a" * 200000, "limits": {"output_bytes": 1000}}))
print(json.dumps({"stdout": "a" * 200000}))' > r.jsonl
	run --separate-stderr "$BIN/sbx-cap" < r.jsonl
	[ "$status" -eq 0 ]
	jqe 0 '(.stdout | length) < 1100 and .stdout_truncated'
	jqe 1 '(.stdout | length) > 102000 and (.stdout | length) < 102500 and .stdout_truncated'
	run --separate-stderr "$BIN/sbx-cap" -n 10 < r.jsonl
	jqe 0 '(.stdout | test("^aaaaa\n\\[\\.\\.\\. 199990 bytes truncated \\.\\.\\.\\]\naaaaa$"))'
}

# bats test_tags=valgrind
@test "stderr and the compiler's output are capped too; short fields untouched" {
	echo '{"stdout":"ok","stderr":"'"$(head -c 5000 /dev/zero | tr '\0' e)"'","compile":{"stdout":"","stderr":"'"$(head -c 5000 /dev/zero | tr '\0' w)"'"},"task":"keep"}' > r.jsonl
	run --separate-stderr "$BIN/sbx-cap" -n 100 < r.jsonl
	jqe 0 '.stdout == "ok" and .stdout_truncated == null and .stderr_truncated == true'
	jqe 0 '.compile.stderr_truncated == true and (.compile.stderr | startswith("wwww")) and .compile.stdout == "" and .task == "keep"'
}

# bats test_tags=valgrind
@test "NUL and already-replaced characters survive capping" {
	echo '{"stdout":"\u0000a\ufffdb"}' | "$BIN/sbx-cap" -n 100 > out
	[ "$(jq -c .stdout out)" = '"\u0000a�b"' ]
}

@test "invalid lines become invalid records, exit 1; records without output pass through" {
	run --separate-stderr "$BIN/sbx-cap" < <(printf '%s\n' 'x' '{"status":"invalid","error":"e"}')
	[ "$status" -eq 1 ]
	jqe 0 '.error == "line 1: not valid JSON: unexpected character (strings need double quotes) at column 1"'
	[ "${lines[1]}" = '{"status":"invalid","error":"e"}' ]
}

@test "-n must be a size" {
	run --separate-stderr "$BIN/sbx-cap" -n lots
	[ "$status" -eq 2 ]
	[[ ${stderr_lines[0]} == 'sbx-cap: -n: "lots" is not a size from 0 to 1g ("100k", "1m", bytes)' ]]
}
