#!/usr/bin/env bats
# Every configured language, through sbx-validate | sbx-run on the backend
# SBX_BACKEND names (native by default).  t/lang/LANGUAGE/CASE.EXT are the
# programs (hello, stdin, exit, crash, compile_error for compiled languages,
# timeout, memory, file), t/lang/requests.sh makes them requests and
# t/lang/expect.jq holds what each case's result must be, the same for every
# language (bench/languages.sh uses both too).  All cases of all languages
# run as one batch (-j 2), once, when the first test needs them; each test
# reads its language's.  The guests run only the kernel-tagged test here:
# every language's hello, each compiled one in a stage of its own.
#   With the docker backend, what a language changes is the image's
# runtime: each language's hello, compile_error and memory cases run
# there.  How the backend passes stdin and files and reports exit codes,
# crashes and timeouts is the same for every language: Python and C (an
# exception, a signal) run every case.
load helpers

setup_file() {
	# In QEMU without KVM (t/guest) tsc alone takes tens of seconds, and
	# Node.js seconds of CPU to start: there compile stages and runs get
	# longer (the timeout and memory cases set their own).  What the guest
	# checks is the kernel's side of each case, not how fast a runtime is.
	if [ -n "${SBX_GUEST:-}" ]; then
		sed -e 's/^compile_timeout .*/compile_timeout = 150/' -e 's/^timeout .*/timeout = 60/' \
			-e "s|^state_dir .*|state_dir = \"$BATS_FILE_TMPDIR/var\"|" \
			-e "s|^history .*|history = \"$BATS_FILE_TMPDIR/var/h.db\"|" "$SBX_CONF" > "$BATS_FILE_TMPDIR/guest.conf"
	fi
}

# lconf: the tools' -c for this file's runs (the guest's configuration), or nothing.
lconf() { [ -f "$BATS_FILE_TMPDIR/guest.conf" ] && echo "-c $BATS_FILE_TMPDIR/guest.conf"; }

# case_ere: the cases this backend runs (above), as an ERE on
# "LANGUAGE/CASE".
case_ere() { if on_docker; then echo '^(python|c)/|/(hello|compile_error|memory)$'; else echo /; fi; }

# results: the file of every case's result, run the first time it is asked for.
results() {
	local r=$BATS_FILE_TMPDIR/results.jsonl
	if [ ! -s "$r" ]; then
		"$ROOT/t/lang/requests.sh" | jq -c --arg e "$(case_ere)" 'select(.id | test($e))' |
			"$BIN/sbx-validate" $(lconf) | "$BIN/sbx-run" $(lconf) -j 2 > "$r.part" && mv "$r.part" "$r"
	fi
	echo "$r"
}

teardown() { assert_no_leftovers; }

languages() { find "$ROOT/t/lang" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort; }

# check LANGUAGE: every case of the language meets its expectation; the
# misses are listed, each with the result that missed.
check() {
	local lang=$1 results bad n want
	results=$(results)
	[ -d "$ROOT/t/lang/$lang" ] || { echo "no test programs in t/lang/$lang" >&2; return 1; }
	if jq -e --arg l "$lang" 'select(.id == "\($l)/hello" and .status == "invalid" and (.error | test("is not installed")))' \
		"$results" > /dev/null; then
		skip "$(jq -r --arg l "$lang" 'select(.id == "\($l)/hello") | .error' "$results")"
	fi
	bad=$(jq -c --arg l "$lang" 'select(.id | startswith($l + "/"))' "$results" | jq -c -f "$ROOT/t/lang/expect.jq")
	if [ -n "$bad" ]; then
		printf '%s: cases that missed:\n%s\n' "$lang" "$bad" >&2
		return 1
	fi
	# every case this backend runs ran (natively 7 for an interpreted
	# language, 8 for a compiled one)
	n=$(jq -s --arg l "$lang" '[.[] | select(.id | startswith($l + "/"))] | length' "$results")
	want=$(cd "$ROOT/t/lang" && printf '%s\n' "$lang"/*.* | sed 's/\.[^.]*$//' | grep -cE "$(case_ere)")
	[ "$n" -eq "$want" ] || { echo "$lang: $n results, want $want" >&2; return 1; }
}

@test "every configured language has its test programs, and every program's language is configured" {
	run --separate-stderr "$BIN/sbx-run" --check
	configured=$(printf '%s\n' "$output" | jq -r '.languages[].name' | sort)
	tested=$(languages)
	[ "$configured" = "$tested" ]
	# compiled languages have a compile_error case, interpreted ones none
	for l in $tested; do
		compiled=$(jq -r --arg l "$l" 'select(.id == "\($l)/hello") | .compile != null' "$(results)")
		if [ "$compiled" = true ]; then ls "$ROOT/t/lang/$l"/compile_error.* > /dev/null; fi
	done
}

@test "python: hello, stdin, exit, crash, timeout, memory_limit, files" { check python; }
@test "c: hello, stdin, exit, crash, compile_error, timeout, memory_limit, files" { check c; }
@test "cpp: hello, stdin, exit, crash, compile_error, timeout, memory_limit, files" { check cpp; }
@test "javascript: hello, stdin, exit, crash, timeout, memory_limit, files" { check javascript; }
@test "typescript: hello, stdin, exit, crash, compile_error, timeout, memory_limit, files" { check typescript; }
@test "bash: hello, stdin, exit, crash, timeout, memory_limit, files" { check bash; }
@test "go: hello, stdin, exit, crash, compile_error, timeout, memory_limit, files" { check go; }
@test "rust: hello, stdin, exit, crash, compile_error, timeout, memory_limit, files" { check rust; }
@test "java: hello, stdin, exit, crash, compile_error, timeout, memory_limit, files" { check java; }
@test "ruby: hello, stdin, exit, crash, timeout, memory_limit, files" { check ruby; }
@test "php: hello, stdin, exit, crash, timeout, memory_limit, files" { check php; }

# bats test_tags=kernel
@test "every language's hello runs; each compiled one compiles in a stage of its own (the cache off)" {
	# A runtime meets the sandbox's kernel-facing side (its threads, its
	# memory and clone calls under the filter, the mounts) at its first
	# start.  Every stage of a job takes a mount of the scratch of its own;
	# a cache hit would skip the compile stage (and once hid that kernels
	# before 6.15 could not clone one).
	[ -z "${SBX_TEST_DELEGATED:-}" ] ||
		skip "the guest's root phase runs every language on this kernel; t/35 compiles and runs as the delegated user"
	local langs
	mapfile -t langs < <(languages)
	"$ROOT/t/lang/requests.sh" "${langs[@]}" | jq -c 'select(.id | endswith("/hello"))' > hellos
	run --separate-stderr bash -c "'$BIN/sbx-validate' $(lconf) < hellos | '$BIN/sbx-run' $(lconf) --no-cache -j 2"
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	[ "${#lines[@]}" -eq "${#langs[@]}" ]
	for i in "${!lines[@]}"; do
		if printf '%s\n' "${lines[$i]}" | jq -e '.status == "invalid" and (.error | test("is not installed"))' > /dev/null; then
			continue # reported by that language's own test
		fi
		if compgen -G "$ROOT/t/lang/${langs[$i]}/compile_error.*" > /dev/null; then
			jqe "$i" '.status == "success" and .stdout == "hello\n" and .compile.status == "success" and .compile.cached == false'
		else
			jqe "$i" '.status == "success" and .stdout == "hello\n" and .compile == null'
		fi
	done
}

@test "C and C++ in the GNU dialects judges use: M_PI, pid_t, strdup, typeof; a call to an undeclared function is a compile error" {
	cat > gnu.c <<-'EOF'
	#include <math.h>
	#include <stdio.h>
	#include <stdlib.h>
	#include <string.h>
	#include <unistd.h>
	int main(void) {
		pid_t p = getpid();
		char *s = strdup("pi");
		typeof(M_PI) x = M_PI;
		printf("%s %.2f %d\n", s, x, p > 0);
		free(s);
		return 0;
	}
	EOF
	cat > gnu.cpp <<-'EOF'
	#include <cmath>
	#include <cstdio>
	#include <cstring>
	#include <unistd.h>
	int main() { pid_t p = getpid(); typeof(M_PI) x = M_PI; std::printf("%s %.2f %d\n", strdup("pi"), x, p > 0); }
	EOF
	# strdup undeclared: its pointer would be cut to an int and crash
	printf '#include <stdio.h>\nint main(void) { char *s = my_strdup("x"); puts(s); return 0; }\n' > implicit.c
	{
		jq -nc --rawfile c gnu.c '{id: "c", language: "c", code: $c}'
		jq -nc --rawfile c gnu.cpp '{id: "cpp", language: "cpp", code: $c}'
		jq -nc --rawfile c implicit.c '{id: "implicit", language: "c", code: $c}'
	} > reqs
	run --separate-stderr bash -c "'$BIN/sbx-validate' $(lconf) < reqs | '$BIN/sbx-run' $(lconf) -j 2"
	jqe 0 '.status == "success" and .stdout == "pi 3.14 1\n"'
	jqe 1 '.status == "success" and .stdout == "pi 3.14 1\n"'
	jqe 2 '.status == "compile_error" and (.compile.stderr | test("implicit declaration of function .my_strdup.")) and .stdout == ""'
}

@test "Java: the file bears the public class's name, whatever it is; comments and strings do not count" {
	cat > Hello.java <<-'EOF'
	// public class Fake {}
	/* public class AlsoFake {} */
	import java.util.*;
	public final class HelloWorld {
		static final String S = "public class NotThis {";
		public static void main(String[] a) { System.out.println("hi " + String.join(",", a) + " " + new Scanner(System.in).nextLine()); }
	}
	class Helper {}
	EOF
	{
		jq -nc --rawfile c Hello.java '{id: "hw", language: "java", code: $c, args: ["x", "y"], stdin: "in\n"}'
		jq -nc '{id: "main", language: "java", code: "class Main { public static void main(String[] a) { System.out.println(1); } }"}'
		jq -nc '{id: "two", language: "java", code: "public class A {}\npublic class B { public static void main(String[] a) {} }"}'
	} > reqs
	run --separate-stderr bash -c "'$BIN/sbx-validate' $(lconf) < reqs | '$BIN/sbx-run' $(lconf) -j 2"
	jqe 0 '.status == "success" and .stdout == "hi x,y in\n"'
	jqe 1 '.status == "success" and .stdout == "1\n"'
	# two public classes: the compiler's own words, against the first's file
	jqe 2 '.status == "compile_error" and (.compile.stderr | test("class B is public, should be declared in a file named B.java"))'
}

@test "the versions the sandbox sees are reported, and a missing runtime is an invalid record naming it and the fix" {
	run --separate-stderr "$BIN/sbx-run" --check
	# 1: usable with fewer limits (an ordinary user's cgroups)
	[ "$status" -eq 0 ] || { [ "$(id -u)" != 0 ] && [ "$status" -eq 1 ]; }
	for l in $(languages); do
		printf '%s\n' "$output" | jq -e --arg l "$l" '.languages[] | select(.name == $l)
			| (.available and (.version | length > 0)) or (.error | test("not installed"))' > /dev/null
	done
	# a language whose program is absent
	conf=$(conf_with '$a\
[language.cobol]\
file = "main.cob"\
compile = ["cobc-not-here", "-x", "main.cob"]\
outputs = ["main"]\
run = ["./main"]\
hint = "apt-get install gnucobol"')
	if on_docker; then
		# what an image holds is known only by running it: the compile
		# stage says the program is missing
		sed -i 's|^file = "main.cob"|image = "sbx-test:host"\nbinds = ["/usr"]\n&|' "$conf"
		run_req '{"language":"cobol","code":"x"}' -c "$conf"
		jqe 0 '.status == "internal_error" and (.error | contains("cannot run \"cobc-not-here\" in the sandbox: No such file or directory"))'
		return
	fi
	run_req '{"language":"cobol","code":"x"}' -c "$conf"
	jqe 0 '.status == "invalid" and (.error | contains("\"cobc-not-here\" is not installed") and contains("apt-get install gnucobol"))'
	run --separate-stderr "$BIN/sbx-run" -c "$conf" --check
	printf '%s\n' "$output" | jq -e '.languages[] | select(.name == "cobol") | .available == false and (.error | contains("apt-get install gnucobol"))'
}

@test "limit placeholders: {memory}, {memory_mib} and {cpus} in argv and env take the stage's limits" {
	conf=$(conf_with '$a\
[language.probe]\
file = "main.sh"\
compile = ["bash", "-c", "echo compile {memory} {memory_mib} {cpus} >&2", "x"]\
run = ["bash", "main.sh", "{memory}"]\
env = ["PROBE={memory_mib}:{cpus}"]\
compile_memory = "512m"\
compile_cpus = 2')
	if on_docker; then sed -i 's|^file = "main.sh"|image = "sbx-test:host"\nbinds = ["/usr"]\n&|' "$conf"; fi
	run_req '{"language":"probe","code":"echo \"$1 $PROBE $2\"","memory":"100m","cpus":1.5,"args":["{memory}"]}' -c "$conf"
	jqe 0 '.status == "success" and .stdout == "104857600 100:2 {memory}\n"'
	jqe 0 '.compile.stderr == "compile 536870912 512 2\n"'
}
