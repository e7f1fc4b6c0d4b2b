#!/usr/bin/env bats
# Judging ("tests"): one request, many tests, a contest judge's verdict.
# Every compare mode, every verdict, a checker that accepts one of several
# answers and checkers that misbehave, the invalid tests, and the hostile
# programs, each checked from the host: a test's program is contained in
# its own sandbox, nothing is left behind.
load helpers

teardown() { assert_no_leftovers; }

# judge CODE TESTS [EXTRA]: a Python request judged on TESTS (a jq array).
judge() { jq -cn --arg c "$1" "{language: \"python\", code: \$c, tests: $2} + ${3:-{\}}"; }

# The sum of two numbers on stdin, the problem most tests here set.
SUM='a, b = map(int, input().split()); print(a + b)'

@test "accepted: every test passed; the result has the verdict, counts, and each test's run" {
	run_req "$(judge "$SUM" '[{stdin: "1 2", expected_stdout: "3\n"}, {stdin: "40 2\n", expected_stdout: "42"}]')"
	[ "$status" -eq 0 ]
	jqe 0 '.status == "success" and .verdict == "accepted" and .tests_passed == 2 and .tests_total == 2 and (has("failed_test") | not)'
	jqe 0 '[.tests[] | .status] == ["passed", "passed"] and [.tests[] | .index] == [0, 1]'
	jqe 0 '.tests | all(.exit_code == 0 and .duration_ms > 0 and .stdout_bytes > 0 and (.stdout | length) < 10)'
	# the top-level time and memory are the most of any test
	jqe 0 '.duration_ms == ([.tests[].duration_ms] | max)'
	jqe 0 '(.limits_enforced | index("namespaces")) and .stdout == "" and .exit_code == 0'
}

@test "compare trim (the default): trailing spaces, CRLF and a missing final newline do not matter; a changed line does" {
	code='print("a b  \r"); print("c"); print(); print()'
	run_req "$(judge "$code" '[{expected_stdout: "a b\nc"}, {expected_stdout: "a b\r\nc\r\n"}, {expected_stdout: "a  b\nc\n"}, {expected_stdout: "a b\nc\nd\n"}]')"
	jqe 0 '[.tests[].status] == ["passed", "passed", "wrong_answer", "wrong_answer"]'
	jqe 0 '.tests[2].diff == {line: 1, expected: "a  b", got: "a b"}'
	jqe 0 '.tests[3].diff == {line: 3, expected: "d", got: null}'
	jqe 0 '.verdict == "wrong_answer" and .failed_test == 2 and .tests_passed == 2 and .status == "rejected" and .exit_code == 0'
}

@test "compare exact: byte for byte, the first difference's line and column" {
	run_req "$(judge 'print("ab\ncd")' '[{expected_stdout: "ab\ncd\n"}, {expected_stdout: "ab\ncd"}, {expected_stdout: "ab\ncx\n"}, {expected_stdout: "ab\r\ncd\r\n"}]' '{compare: "exact"}')"
	jqe 0 '[.tests[].status] == ["passed", "wrong_answer", "wrong_answer", "wrong_answer"]'
	jqe 0 '.tests[2].diff == {line: 2, column: 2, expected: "cx\n", got: "cd\n"}'
	jqe 0 '.tests[3].diff.line == 1 and .tests[3].diff.column == 3'
}

@test "compare tokens and float:EPS: whitespace-separated tokens, numbers within an absolute or relative tolerance" {
	run_req "$(judge 'print("1   2\n\n3")' '[{expected_stdout: "1 2 3"}, {expected_stdout: "1\n2\n4"}, {expected_stdout: "1 2"}]' '{compare: "tokens"}')"
	jqe 0 '[.tests[].status] == ["passed", "wrong_answer", "wrong_answer"]'
	jqe 0 '.tests[1].diff == {token: 3, line: 3, expected: "4", got: "3"}'
	jqe 0 '.tests[2].diff == {token: 3, line: 3, expected: null, got: "3"}'
	code='print(1/3, 2e9 + 1, "nan", "x")'
	run_req "$(judge "$code" '[{expected_stdout: "0.333333 2000000000 nan x"}, {expected_stdout: "0.3334 2e9 nan x"}, {expected_stdout: "0.333333 2e9 nan y"}]' '{compare: "float:1e-6"}')"
	# 2e9 + 1 is within 1e-6 relative; 0.3334 is not within 1e-6 of 1/3
	jqe 0 '[.tests[].status] == ["passed", "wrong_answer", "wrong_answer"]'
	jqe 0 '.tests[1].diff.token == 1 and .tests[2].diff == {token: 4, line: 1, expected: "y", got: "x"}'
}

@test "a checker accepts any one of several valid answers, and rejects a wrong one (testlib's order and exit codes)" {
	# print a divisor of n other than 1 and n: many answers are right
	ck='import sys
inp, out, exp = (open(f).read() for f in sys.argv[1:4])
n, d = int(inp), int(out)
if 1 < d < n and n % d == 0: sys.exit(0)
print(f"{d} does not divide {n}", file=sys.stderr); sys.exit(1)'
	prog='n = int(input()); print(next(d for d in range(n - 1, 1, -1) if n % d == 0) if n != 15 else 4)'
	run_req "$(judge "$prog" '[{stdin: "12", expected_stdout: "2"}, {stdin: "35"}, {stdin: "15"}]' "$(jq -cn --arg c "$ck" '{compare: "checker", checker: {language: "python", code: $c}}')")"
	jqe 0 '[.tests[].status] == ["passed", "passed", "wrong_answer"]'
	jqe 0 '.tests[2].checker_message == "4 does not divide 15\n" and .verdict == "wrong_answer"'
	# a compiled checker, compiled once (C): the expected file is the third argument
	cck='#include <stdio.h>
int main(int c, char **v) { FILE *o = fopen(v[2], "r"), *e = fopen(v[3], "r"); int x = 0, y = 1;
  if (!o || !e || fscanf(o, "%d", &x) != 1 || fscanf(e, "%d", &y) != 1) return 3; return x == y ? 0 : 1; }'
	run_req "$(judge "$SUM" '[{stdin: "1 2", expected_stdout: "3"}, {stdin: "2 2", expected_stdout: "5"}]' "$(jq -cn --arg c "$cck" '{compare: "checker", checker: {language: "c", code: $c}}')")"
	jqe 0 '[.tests[].status] == ["passed", "wrong_answer"]'
}

@test "a checker that misbehaves is judge_error for its test, never a false pass" {
	mk() { jq -cn --arg c "$1" '{compare: "checker", checker: {language: "python", code: $c, timeout: 1}}'; }
	for ck in 'import os; os.kill(os.getpid(), 11)' 'import time; time.sleep(30)' 'raise SystemExit(3)' \
		'import sys; sys.stdout.write("garbage " * 100000)' 'import sys; sys.exit(42)'; do
		run_req "$(judge 'print(1)' '[{stdin: "x"}]' "$(mk "$ck")")"
		jqe 0 '.verdict == "judge_error" and .tests[0].status == "judge_error" and .tests_passed == 0 and .status == "error"'
		jqe 0 '.tests[0].error | test("^the checker (died of SIGSEGV|passed its timeout|exited with code (3|42)|wrote more than its output limit)$")'
	done
	# one that does not compile: every test says why
	run_req "$(judge 'print(1)' '[{}, {}]' '{compare: "checker", checker: {language: "c", code: "int main( {"}}')"
	jqe 0 '[.tests[].status] == ["judge_error", "judge_error"] and (.tests[0].error | test("the checker did not compile: .*error"))'
}

# bats test_tags=kernel
@test "verdicts: timeout, memory_limit, error (exit code or signal), output_limit, compile_error; the first failing test decides" {
	code='import sys, os
t = input()
if t == "loop":
    sys.stdout.write("partial"); sys.stdout.flush()
    while True: pass
if t == "mem": x = bytearray(1 << 30)
if t == "exit": sys.exit(7)
if t == "kill": os.kill(os.getpid(), 9)
if t == "flood": sys.stdout.write("y" * 6000000)
print("ok")'
	run_req "$(judge "$code" '[{stdin: "ok", expected_stdout: "ok"}, {stdin: "loop", timeout: '"$(bound 3 8)"'}, {stdin: "mem", memory: "64m", timeout: 60}, {stdin: "exit"}, {stdin: "kill"}, {stdin: "flood"}]')"
	# (without cgroups the memory limit is an rlimit: Python's MemoryError)
	local mem=memory_limit
	has_cgroup_limits || mem=error
	jqe 0 "[.tests[].status] == [\"passed\", \"timeout\", \"$mem\", \"error\", \"error\", \"output_limit\"]"
	# (its timeout and the kill: a QEMU guest takes seconds to start
	# Python beside another guest, which must print before the timeout)
	jqe 0 ".tests[1].duration_ms < $(bound 4000 12000)"' and .tests[1].stdout == "partial" and .tests[3].exit_code == 7 and .tests[4].signal == "SIGKILL"'
	jqe 0 '.tests[5].stdout_bytes == 6000003 and (.tests[5].stdout | length) < 1200'
	jqe 0 '.verdict == "timeout" and .failed_test == 1 and .status == "timeout" and .stdout == "partial" and .tests_passed == 1'
	run_req "$(jq -cn '{language: "c", code: "int main( {", tests: [{}, {}]}')"
	jqe 0 '.status == "compile_error" and .verdict == "compile_error" and .tests_passed == 0 and .tests_total == 2 and .tests == []'
	jqe 0 '.compile.stderr | test("error")'
}

@test "stop_on_fail: the tests after the first failing one are skipped, whatever the timing" {
	code='import time
t = input()
if t == "slow": time.sleep(20)
print("ok" if t != "bad" else "no")'
	run_req "$(judge "$code" '[{stdin: "a", expected_stdout: "ok"}, {stdin: "bad", expected_stdout: "ok"}, {stdin: "slow"}, {stdin: "a"}]' '{stop_on_fail: true}')" -j 4
	jqe 0 '[.tests[].status] == ["passed", "wrong_answer", "skipped", "skipped"] and .verdict == "wrong_answer"'
	jqe 0 '.tests_passed == 1 and .tests_total == 4 and .duration_ms < 10000'
}

# bats test_tags=kernel
@test "compiled once, each test in a fresh sandbox: nothing one test writes is seen by the next" {
	code='#include <stdio.h>
int main(void) { FILE *f = fopen("mark", "r"); puts(f ? "seen" : "fresh"); f = fopen("mark", "w"); if (f) fclose(f); return 0; }'
	run_req "$(jq -cn --arg c "$code" '{language: "c", code: $c, tests: [range(5) | {expected_stdout: "fresh"}]}')" --no-cache --timings
	jqe 0 '.verdict == "accepted" and .compile.status == "success" and .compile.cached == false'
	# one compile stage (its timings), five runs
	jqe 0 '.timings | has("compile_stage") and has("compile_start")'
	# a file of the compiled program's name, the request's or a test's, is
	# replaced by the program (as without tests, with the cache on too)
	code='#include <stdio.h>
int main(void) { puts("compiled"); return 0; }'
	run_req "$(jq -cn --arg c "$code" '{language: "c", code: $c, files: {main: "junk"}, tests: [{expected_stdout: "compiled"}, {files: {main: "junk"}, expected_stdout: "compiled"}]}')"
	jqe 0 '.verdict == "accepted"'
	run_req "$(jq -cn --arg c "$code" '{language: "c", code: $c, files: {main: "junk"}}')"
	jqe 0 '.status == "success" and .stdout == "compiled\n" and .compile.cached == true'
	# a test's own files, beside the job's; the program file is the program's
	run_req "$(judge 'print(open("in.txt").read(), open("shared").read())' '[{files: {"in.txt": "one"}, expected_stdout: "one s"}, {files: {"in.txt": "two"}, expected_stdout: "two s"}]' '{files: {shared: "s"}}')"
	jqe 0 '.verdict == "accepted"'
}

@test "tests run beside each other within -j, and never more sandboxes than -j" {
	span='import json, time; t0 = time.time(); time.sleep(1.5); print(json.dumps([t0, time.time()]))'
	run_req "$(judge "$span" '[{}, {}, {}, {}]')" -j 2
	jqe 0 '.verdict == "accepted"'
	printf '%s\n' "${lines[0]}" | jq -c '[.tests[].stdout | fromjson]' > spans
	# at most 2 at once: every instant lies in 2 spans at most; and some overlap
	jq -e '. as $s | [.[] | .[0] + 0.01] | all(. as $t | [$s[] | select(.[0] <= $t and $t < .[1])] | length <= 2)' spans
	jq -e '(.[0][0] < .[1][1] and .[1][0] < .[0][1])' spans
	# once every test has started, the slots no test holds are free again:
	# the job after it does not wait for its slowest test
	{ judge 'import time; time.sleep(float(input()))' '[{stdin: "0.1"}, {stdin: "3"}]' '{id: "slow"}'
		py 'print("b")' '{id: "b"}'; } > reqs
	run --separate-stderr sbx -j 2 --unordered < reqs
	[ "$(printf '%s\n' "${lines[@]}" | jq -r .id | tr '\n' ' ')" = "b slow " ]
}

# bats test_tags=kernel
@test "hostile programs per test: reading past stdin, a fork loop, writing gigabytes: each contained, nothing left" {
	skip_unless_cgroups
	code='import os, sys
t = sys.stdin.readline().strip()
if t == "read": print(len(sys.stdin.read()), sys.stdin.read() == "")
if t == "fork":
    while True:
        try: os.fork()
        except OSError: break
    print("limited")
if t == "gb":
    b = b"z" * (1 << 20)
    while True: sys.stdout.buffer.write(b)'
	# (gb's timeout: Python takes seconds to start in an emulated guest
	# beside another, and must write 4 MB before it)
	run_req "$(judge "$code" '[{stdin: "read\nrest", expected_stdout: "4 True"}, {stdin: "fork", timeout: 5}, {stdin: "gb", timeout: '"$(bound 2 6)"'}]' '{pids: 16}')"
	jqe 0 '.tests[0].status == "passed"'
	jqe 0 '.tests[1].status as $s | ["passed", "wrong_answer", "error", "timeout"] | index($s)'
	jqe 0 '.tests[2].status == "timeout" and .tests[2].stdout_bytes > 4000000'
	# sbx-run held 4 MiB of it, not gigabytes: its own peak stays small
	jqe 0 '(.tests | length) == 3'
}

@test "invalid tests: each error names the test and the field" {
	# bad TESTS EXTRA TEXT: refused, with TEXT (a fixed string) in its error
	bad() {
		run --separate-stderr "$BIN/sbx-validate" <<< "$(judge 'print(1)' "$1" "$2")"
		[ "$status" -eq 1 ]
		jqe 0 '.status == "invalid"'
		[[ "$(jqn 0 .error)" == *"$3"* ]] || { echo "error: $(jqn 0 .error)" >&2; return 1; }
	}
	bad '[]' '{}' 'has 0 tests: give 1 to max_tests 100'
	bad '{}' '{}' '"tests" must be an array of tests, got object'
	bad '[{}, {stdin: 5}]' '{}' 'tests[1].stdin must be a string, got number'
	bad '[{timeout: 9999}]' '{}' 'tests[0].timeout 9999 s exceeds max_timeout 60 s'
	bad '[{memory: "1k"}]' '{}' 'tests[0].memory 1 KiB is below the minimum of 4 MiB'
	bad '[{expected: "3"}]' '{}' 'tests[0]: unknown field "expected"'
	bad '[{args: [1]}]' '{}' 'tests[0].args[0] must be a string, got number'
	bad '[{files: {"../x": "a"}}]' '{}' 'tests[0].files: path "../x"'
	bad '[{}, 3]' '{}' 'tests[1] must be an object, got number'
	bad '[{}]' '{stdin: "x"}' 'with "tests", "stdin" goes in each test'
	bad '[{}]' '{compare: "fuzzy"}' '"compare" must be "exact", "trim", "tokens", "float:EPS" or "checker", got "fuzzy"'
	bad '[{}]' '{compare: "float:x"}' 'EPS must be a number in [0, 1)'
	bad '[{}]' '{compare: "checker"}' 'compare "checker" needs "checker"'
	bad '[{}]' '{compare: "checker", checker: {language: "nope", code: "1"}}' 'checker: unsupported language "nope"'
	bad '[{}]' '{compare: "checker", checker: {language: "python", code: "1", stdin: ""}}' 'checker: unknown field "stdin"'
	bad '[{}]' '{checker: {language: "python", code: "1"}}' '"checker" goes with "compare": "checker"'
	bad '[{}]' '{stop_on_fail: 1}' '"stop_on_fail" must be true or false'
	bad '[{}]' '{artifacts: true}' 'fresh sandbox: "artifacts" does not go with it'
	bad '[{files: {"main.py": "x"}}]' '{}' 'tests[0].files: "main.py" would replace the program file'
	run --separate-stderr "$BIN/sbx-validate" <<< '{"language": "python", "code": "1", "compare": "exact"}'
	jqe 0 '.error | test("judges a program.s \"tests\"")'
	# too many tests, too much test data (from the configuration)
	conf=$(conf_with 's/^max_tests .*/max_tests = 3/; s/^max_tests_size .*/max_tests_size = "10k"/')
	run --separate-stderr "$BIN/sbx-validate" -c "$conf" <<< "$(judge 'print(1)' '[{}, {}, {}, {}]')"
	jqe 0 '.error | test("has 4 tests: give 1 to max_tests 3")'
	run --separate-stderr "$BIN/sbx-validate" -c "$conf" <<< "$(judge 'print(1)' '[range(3) | {stdin: ("x" * 4000)}]')"
	jqe 0 '.error | test("tests. data is 11.7 KiB in all, exceeds max_tests_size 10 KiB")'
}

@test "sbx-run holds hand-written judged jobs to the ceilings too" {
	job=$("$BIN/sbx-validate" <<< "$(judge 'print(1)' '[{}]')")
	run --separate-stderr "$BIN/sbx-run" <<< "$(jq -c '.exec.tests[0].limits.timeout_ms = 3600000' <<< "$job")"
	jqe 0 '.status == "invalid" and (.error | test("tests\\[0\\]: limits.timeout_ms .* exceeds the most"))'
	run --separate-stderr "$BIN/sbx-run" <<< "$(jq -c 'del(.exec.tests)' <<< "$job")"
	jqe 0 '.status == "invalid" and (.error | test("without exec.tests"))'
	run --separate-stderr "$BIN/sbx-run" <<< "$(jq -c '.tests += [{}]' <<< "$job")"
	jqe 0 '.status == "invalid" and (.error | test("one entry each"))'
	# a checker that is itself judged, or a judged job in a session
	run --separate-stderr "$BIN/sbx-run" <<< "$(jq -c '.exec.checker = . | .compare = "checker"' <<< "$job")"
	jqe 0 '.status == "invalid" and .error == "exec.checker: a checker is a plain program: no tests, cell, session or install"'
	conf=$(conf_with 's/^$//')
	run --separate-stderr "$BIN/sbx-run" -c "$conf" <<< "$(jq -c --arg w "$BATS_TEST_TMPDIR/var/sessions/0123456789abcdef0123456789abcdef" \
		'.exec.workspace = $w | .exec.file = ".sbx-0000-main.py"' <<< "$job")"
	jqe 0 '.status == "invalid" and (.error | test("^exec.tests: a judged job runs each test in a fresh sandbox"))'
}

@test "cancelled while it compiles: the verdict is cancelled, and the tests' inputs and expected outputs do not come back" {
	code='#include <iostream>
#include <regex>
int main() { std::regex r("a+"); std::cout << std::regex_match("aaa", r) << std::endl; }'
	jq -cn --arg c "$code" '{id: "cc", language: "cpp", code: $c, tests: [{stdin: "SECRET-INPUT", expected_stdout: "SECRET-EXPECTED"}]}' |
		"$BIN/sbx-validate" > job
	# the cancel once its compile stage has started (--events says so)
	mkfifo events
	# (the reader first: bash opens the FIFO for writing only once one is there)
	run --separate-stderr "$BIN/sbx-run" --no-cache --control 3 \
		3< <({ grep -m1 -q '"event":"compile"'; echo '{"cancel": "cc"}'; cat > /dev/null; } < events) --events 4 4> events < job
	jqe 0 '.status == "cancelled" and .verdict == "cancelled" and .tests == [] and .tests_total == 1 and .tests_passed == 0'
	[[ "${lines[0]}" != *SECRET* ]]
}

# bats test_tags=valgrind
@test "sbx-cap caps each test's output; sbx-log stores the verdict and counts; sbx-history --stats=verdict" {
	run --separate-stderr sh -c "'$BIN/sbx-validate' | '$BIN/sbx-run' | '$BIN/sbx-cap' -n 10 | '$BIN/sbx-log'" <<< "$(judge 'import sys; print("x" * 50); sys.exit(int(input()))' '[{stdin: "0"}, {stdin: "1"}]')
$(judge "$SUM" '[{stdin: "1 1", expected_stdout: "2"}]')
$(judge "$SUM" '[{stdin: "1 1", expected_stdout: "3"}]')"
	[ "$status" -eq 0 ]
	jqe 0 '(.tests[0].stdout | test("truncated")) and .tests[0].stdout_bytes == 51'
	run --separate-stderr "$BIN/sbx-history" --verdict accepted
	[ "${#lines[@]}" -eq 1 ]
	jqe 0 '.verdict == "accepted" and .tests_passed == 1 and .tests_total == 1'
	run --separate-stderr "$BIN/sbx-history" --stats=verdict
	jqe 0 '.language == "python" and .verdict == "accepted" and .count == 1'
	jqe 1 '.verdict == "error" and .count == 1'
	jqe 2 '.verdict == "wrong_answer" and .count == 1'
	jqe 3 '.verdict == "all" and .count == 3 and .success_rate == 0.3333'
	run --separate-stderr "$BIN/sbx-history" --stats=nope
	[ "$status" -eq 2 ]
}
