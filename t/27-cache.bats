#!/usr/bin/env bats
# The compile cache (lib/ccache): a repeat of the same compile is a hit that
# skips the compile stage; anything in the key that changes is a miss;
# concurrent misses compile once; a damaged entry is discarded, never run;
# the size bound evicts the least recently used; it can be turned off.
# Each test has its own state directory (conf_with), so its own cache.
load helpers

teardown() { assert_no_leftovers; }

cpp() { jq -cn --arg c "$1" '{language: "cpp", code: $c}'; }
HELLO='#include <iostream>
int main() { std::cout << "hello " << sizeof(long) << std::endl; }'

@test "a repeat compile is a hit: same output, compile.cached, the compile stage skipped" {
	conf=$(conf_with '')
	run_req "$(cpp "$HELLO")" -c "$conf"
	jqe 0 '.status == "success" and .stdout == "hello 8\n" and .compile.cached == false and .compile.duration_ms > 50'
	run_req "$(cpp "$HELLO")" -c "$conf" --timings
	jqe 0 '.status == "success" and .stdout == "hello 8\n" and .compile.cached == true and .compile.status == "success"'
	jqe 0 '.timings.cache_hit > 0 and .timings.compile_stage == null and .compile.duration_ms < 50'
	# one entry: a manifest and the binary
	[ "$(ls "$BATS_TEST_TMPDIR/var/cache" | wc -l)" -eq 1 ]
	jq -e '.files | map(.path) == ["main"]' "$BATS_TEST_TMPDIR"/var/cache/*/manifest.json
}

@test "what is in the key: code, files, compile limits; a failed compile is not stored" {
	conf=$(conf_with '')
	run_req "$(cpp "$HELLO")" -c "$conf"
	run_req "$(cpp "$HELLO// changed")" -c "$conf"
	jqe 0 '.compile.cached == false'
	run_req "$(cpp "$HELLO" | jq -c '.files = {"extra.h": "x"}')" -c "$conf"
	jqe 0 '.compile.cached == false'
	conf2=$(conf_with 's/^compile_memory *=.*/compile_memory = "900m"/')
	run_req "$(cpp "$HELLO")" -c "$conf2"
	jqe 0 '.compile.cached == false'
	run_req "$(cpp 'int main() { return nope; }')" -c "$conf"
	run_req "$(cpp 'int main() { return nope; }')" -c "$conf"
	jqe 0 '.status == "compile_error" and .compile.cached == false'
}

@test "concurrent misses of one key compile once" {
	conf=$(conf_with '')
	for i in 1 2 3 4; do cpp "$HELLO" | jq -c --arg i "$i" '.id = "c\($i)"'; done > req.jsonl
	run --separate-stderr bash -c "'$BIN/sbx-validate' -c '$conf' < req.jsonl | '$BIN/sbx-run' -c '$conf' -j 4"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | select(.status == "success" and .stdout == "hello 8\n")] | length')" -eq 4 ]
	[ "$(printf '%s\n' "${lines[@]}" | jq -s '[.[] | select(.compile.cached == false)] | length')" -eq 1 ]
}

@test "a damaged entry is discarded and recompiled, never run" {
	conf=$(conf_with '')
	run_req "$(cpp "$HELLO")" -c "$conf"
	entry=$(ls -d "$BATS_TEST_TMPDIR"/var/cache/*/)
	# a different program in the binary's place
	printf '#!/bin/sh\necho pwned\n' > "$entry/f0"
	run_req "$(cpp "$HELLO")" -c "$conf"
	jqe 0 '.status == "success" and .stdout == "hello 8\n" and .compile.cached == false'
	[[ $stderr == *"compile cache: entry"*"damaged; removed"* ]]
	# stored again, intact: the next one is a hit
	run_req "$(cpp "$HELLO")" -c "$conf"
	jqe 0 '.compile.cached == true and .stdout == "hello 8\n"'
	# a broken manifest too
	echo '{' > "$(ls -d "$BATS_TEST_TMPDIR"/var/cache/*/)manifest.json"
	run_req "$(cpp "$HELLO")" -c "$conf"
	jqe 0 '.compile.cached == false and .stdout == "hello 8\n"'
}

@test "cache_size bounds it: the least recently used entries go" {
	conf=$(conf_with 's/^cache_size *=.*/cache_size = "40k"/')
	for i in 1 2 3 4; do
		run_req "$(jq -cn --arg c "int main(void) { return $i - $i; }" '{language: "c", code: $c}')" -c "$conf"
		jqe 0 '.status == "success" and .compile.cached == false'
		# distinct ages (the manifest's mtime, in seconds): every entry so
		# far made 2 s older, rather than a second waited
		for m in "$BATS_TEST_TMPDIR"/var/cache/*/manifest.json; do touch -d "@$(($(stat -c %Y "$m") - 2))" "$m"; done
	done
	total=$(du -sk "$BATS_TEST_TMPDIR/var/cache" | cut -f1)
	[ "$total" -le 60 ]
	[ "$(ls "$BATS_TEST_TMPDIR/var/cache" | wc -l)" -lt 4 ]
	# the newest survived
	run_req "$(jq -cn '{language: "c", code: "int main(void) { return 4 - 4; }"}')" -c "$conf"
	jqe 0 '.compile.cached == true'
	run_req "$(jq -cn '{language: "c", code: "int main(void) { return 1 - 1; }"}')" -c "$conf"
	jqe 0 '.compile.cached == false'
}

@test "off: compile_cache = false, or sbx-run --no-cache" {
	conf=$(conf_with 's/^compile_cache *=.*/compile_cache = false/')
	run_req "$(cpp "$HELLO")" -c "$conf"
	run_req "$(cpp "$HELLO")" -c "$conf"
	jqe 0 '.compile.cached == false'
	[ ! -e "$BATS_TEST_TMPDIR/var/cache" ]
	conf=$(conf_with '')
	run_req "$(cpp "$HELLO")" -c "$conf" --no-cache
	run_req "$(cpp "$HELLO")" -c "$conf" --no-cache
	jqe 0 '.compile.cached == false'
	[ -z "$(ls "$BATS_TEST_TMPDIR/var/cache" 2>/dev/null)" ]
}
