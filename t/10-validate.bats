#!/usr/bin/env bats
# sbx-validate: requests -> jobs or invalid records (DESIGN §2).
load helpers

v() { "$BIN/sbx-validate" "$@"; }

# bats test_tags=valgrind
@test "the README example: a job, an invalid line 2, an unsupported language" {
	run --separate-stderr v < <(printf '%s\n' '{"language":"python","code":"print(1)"}' 'not json' '{"language":"cobol","code":"x"}')
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 3 ]
	jqe 0 '.language == "python" and .code == "print(1)" and (.id | type) == "string"'
	jqe 0 '.limits == {"timeout_ms":10000,"memory_bytes":268435456,"cpus":0.5,"pids":64,"output_bytes":102400,"file_bytes":67108864,"tmpfs_bytes":67108864,"scratch_bytes":67108864,"nofile":1024,"stack_bytes":8388608,"egress_bytes":1073741824,"egress_connections":256,"egress_rate_bytes":0}'
	jqe 0 '.exec.run == ["python3","main.py"] and .exec.file == "main.py" and .exec.compile == null and .backend == "native"'
	jqe 1 '.status == "invalid" and .line == 2 and (.error | startswith("line 2: not valid JSON"))'
	jqe 2 '.status == "invalid" and .error == "unsupported language \"cobol\" (supported: bash, c, cpp, go, java, javascript, php, python, ruby, rust, typescript)"'
}

@test "compiled languages carry compile limits and the compile command" {
	run --separate-stderr v <<< '{"language":"cpp","code":"int main(){}"}'
	[ "$status" -eq 0 ]
	jqe 0 '.exec.compile[0] == "g++" and .exec.run == ["./main"]'
	jqe 0 '.compile_limits.timeout_ms == 30000 and .compile_limits.memory_bytes == 1073741824 and .compile_limits.cpus == 1'
}

# bats test_tags=valgrind
@test "hostile lines become invalid records naming the line; every line gets one output line" {
	{
		echo '{"code": [1,2]}'
		echo '{"language": {}}'
		echo '[]'
		echo '"x"'
		echo '{"a":1}{"b":2}'
		printf '{"language":"python","code":"\xff\xfe"}\n'
		printf '{"language":"python",\0"code":"x"}\n'
		echo '{"language":"python","code":"ok"}'
		echo 'null'
		echo '{"language":"python","code":"x","timeout":"5"}'
	} > in.jsonl
	run --separate-stderr v < in.jsonl
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 10 ]
	jqe 0 '.status == "invalid" and (.error | test("missing \"language\""))'
	jqe 1 '.status == "invalid" and .error == "\"language\" must be a string, got object (supported: bash, c, cpp, go, java, javascript, php, python, ruby, rust, typescript)"'
	jqe 2 '.error == "line 3: expected a JSON object, got array"'
	jqe 3 '.error == "line 4: expected a JSON object, got string"'
	jqe 4 '.error == "line 5: more than one JSON value on the line (one object per line; the second starts at column 8)"'
	jqe 5 '.error | startswith("line 6: invalid UTF-8 at byte")'
	jqe 6 '.error | startswith("line 7: NUL byte at column")'
	jqe 7 '.status == null and .code == "ok"'
	jqe 8 '.error == "line 9: expected a JSON object, got null"'
	jqe 9 '.error == "\"timeout\" must be a number of seconds, got string"'
	[ -z "$stderr" ]
}

# bats test_tags=valgrind
@test "a 50 MiB line is an invalid record, and the next line is still served" {
	{ printf '{"language":"python","code":"'; head -c 52428800 /dev/zero | tr '\0' 'a'; printf '"}\n'; echo '{"language":"python","code":"1"}'; } > big.jsonl
	run --separate-stderr v < big.jsonl
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 2 ]
	jqe 0 '.error == "line 1: line of 50.0 MiB exceeds the record limit of 16 MiB"'
	jqe 1 '.code == "1" and .limits != null'
}

@test "a parse error does not echo the input back" {
	secret=$(head -c 3000 /dev/zero | tr '\0' 's')
	run --separate-stderr v <<< "{\"language\": $secret"
	[ "$status" -eq 1 ]
	[[ $output != *sssssss* ]]
}

@test "code checks: missing, wrong kind, empty, over max_code_size" {
	big=$(head -c 70000 /dev/zero | tr '\0' 'x')
	run --separate-stderr v < <(printf '%s\n' '{"language":"python"}' '{"language":"python","code":7}' '{"language":"python","code":""}' "{\"language\":\"python\",\"code\":\"$big\"}")
	jqe 0 '.error == "missing \"code\" (the program'"'"'s source, as a string)"'
	jqe 1 '.error == "\"code\" must be a string, got number"'
	jqe 2 '.error == "\"code\" is empty"'
	jqe 3 '.error == "code is 68.4 KiB, exceeds max_code_size 64 KiB"'
}

@test "limits: request values within ceilings are used, above them refused with the ceiling" {
	run --separate-stderr v < <(printf '%s\n' \
		'{"language":"python","code":"1","timeout":2.5,"memory":"128m","cpus":1,"pids":10}' \
		'{"language":"python","code":"1","timeout":120}' \
		'{"language":"python","code":"1","memory":"2g"}' \
		'{"language":"python","code":"1","memory":1048576}' \
		'{"language":"python","code":"1","cpus":4}' \
		'{"language":"python","code":"1","pids":1000}' \
		'{"language":"python","code":"1","timeout":0}' \
		'{"language":"python","code":"1","memory":"lots"}' \
		'{"language":"python","code":"1","memory":67108864}' \
		'{"language":"python","code":"1","pids":-3}' \
		'{"language":"python","code":"1","cpus":-1}' \
		'{"language":"python","code":"1","timeout":-5}' \
		'{"language":"python","code":"1","pids":null,"cpus":null}')
	jqe 0 '.limits.timeout_ms == 2500 and .limits.memory_bytes == 134217728 and .limits.cpus == 1 and .limits.pids == 10'
	jqe 1 '.error == "timeout 120 s exceeds max_timeout 60 s"'
	jqe 2 '.error == "memory 2 GiB exceeds max_memory 1 GiB"'
	jqe 3 '.error == "memory 1 MiB is below the minimum of 4 MiB"'
	jqe 4 '.error == "cpus 4 exceeds max_cpus 2"'
	jqe 5 '.error == "pids 1000 exceeds max_pids 256"'
	jqe 6 '.error == "timeout must be a positive number of seconds"'
	jqe 7 '.error == "\"memory\" must be a size such as \"128m\" or a byte count"'
	jqe 8 '.limits.memory_bytes == 67108864'
	# out of range whatever the sign: never taken for "not given"
	jqe 9 '.error == "pids -3 is below the minimum of 2"'
	jqe 10 '.error == "cpus -1 is below the minimum of 0.01"'
	jqe 11 '.error == "timeout must be a positive number of seconds"'
	jqe 12 '.limits.pids == 64 and .limits.cpus == 0.5'
}

@test "network: an allow-list within the configuration's, true for all of it, the host's only by name" {
	run --separate-stderr v <<< '{"language":"python","code":"1","network":true}'
	jqe 0 '.status == "invalid" and (.error | startswith("\"network\": the configuration allows runs no network (network = false in "))'
	run --separate-stderr v <<< '{"language":"python","code":"1","network":["pypi.org"]}'
	jqe 0 '.status == "invalid" and (.error | startswith("\"network\": the configuration allows runs no network"))'
	run --separate-stderr v <<< '{"language":"python","code":"1","network":false}'
	jqe 0 '.exec.network == false'

	# true once meant the host's network: now a load error saying what to write
	conf=$(conf_with 's/^network *=.*/network = true/')
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1"}'
	[ "$status" -eq 2 ]
	[[ $stderr == *'key "network": true is ambiguous: give a list of the hosts runs may reach'*'"host" for the host'* ]]
	conf=$(conf_with 's/^network *=.*/network = ["pypi.org", "bad host"]/')
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1"}'
	[ "$status" -eq 2 ]
	[[ $stderr == *'key "network": "bad host" is not a host pattern'* ]]

	conf=$(conf_with 's/^network *=.*/network = "host"/')
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1","network":true}'
	jqe 0 '.exec.network == true'
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1","network":["anything.example:8080"]}'
	jqe 0 '.exec.network == ["anything.example:8080"]'
	# what a session's user approved is some of the run's own list, nothing else
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1","network":["a.example","b.example"],"user_approved":["b.example"]}'
	jqe 0 '.status != "invalid" and .user_approved == ["b.example"]'
	for bad in '["c.example"]' '"b.example"' '[1]'; do
		run --separate-stderr v -c "$conf" <<< "{\"language\":\"python\",\"code\":\"1\",\"network\":[\"a.example\",\"b.example\"],\"user_approved\":$bad}"
		jqe 0 '.status == "invalid" and (.error | test("\"user_approved\" lists patterns of the request.s \"network\" list"))'
	done
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1","network":true,"user_approved":["b.example"]}'
	jqe 0 '.status == "invalid"'

	conf=$(conf_with 's/^network *=.*/network = ["pypi.org", "*.example.org", "example.net:80"]/')
	run --separate-stderr v -c "$conf" < <(printf '%s\n' \
		'{"language":"python","code":"1","network":true}' \
		'{"language":"python","code":"1","network":["PyPI.org", "a.example.org", "*.b.example.org", "example.net:80"]}' \
		'{"language":"python","code":"1","network":[]}' \
		'{"language":"python","code":"1","network":["example.org"]}' \
		'{"language":"python","code":"1","network":["pypi.org:80"]}' \
		'{"language":"python","code":"1","network":["*.org"]}' \
		'{"language":"python","code":"1","network":["a b"]}' \
		'{"language":"python","code":"1","network":[1]}' \
		'{"language":"python","code":"1","network":"yes"}' \
		"$(jq -nc '{language: "python", code: "1", network: [range(65) | "pypi.org"]}')")
	jqe 0 '.exec.network == ["pypi.org", "*.example.org", "example.net:80"]'
	jqe 1 '.exec.network == ["PyPI.org", "a.example.org", "*.b.example.org", "example.net:80"]'
	jqe 2 '.exec.network == false'
	for i in 3 4 5; do
		jqe $i '.status == "invalid" and (.error | test("^\"network\": \".*\" is not within what the configuration allows \\(pypi.org, \\*.example.org, example.net:80 in .*\\)$"))'
	done
	jqe 6 '.error == "\"network\": \"a b\" is not a host pattern: a host name, *.domain or an address, with an optional :port"'
	jqe 7 '.error == "\"network\": each element must be a host pattern (a string)"'
	jqe 8 '.error | startswith("\"network\" must be false, true (all the configuration allows) or a list of hosts")'
	jqe 9 '.error == "\"network\": at most 64 host patterns"'

	run --separate-stderr v -c "$conf" <<< '{"language":"python","install":["x"],"network":["pypi.org"]}'
	jqe 0 '.error == "an install reaches its language'"'"'s registries only: \"network\" does not go with \"install\""'

	# sbx-run holds a hand-written job to the same rules
	v -c "$conf" <<< '{"language":"python","code":"print(1)","network":["pypi.org"]}' > job
	for n in '["evil.example"]' true '["pypi.org:22"]' '"x"'; do
		run --separate-stderr "$BIN/sbx-run" -c "$conf" < <(jq -c ".exec.network = $n" job)
		jqe 0 '.status == "invalid" and (.error | test("exec.network"))'
	done
}

@test "the computed fields: a job validated again is the same job; setting them is refused, not ignored" {
	v <<< '{"language":"cpp","code":"int main(){}","cpus":1,"args":["a"]}' > job.json
	run --separate-stderr v < <(cat job.json
		jq -c '.limits = {"cpus":2}' job.json
		jq -c 'del(.limits) | .limits.cpus = 2' job.json
		jq -c '.compile_limits.timeout_ms = 60000' job.json
		jq -c '.exec.run = ["/bin/sh","-c","id"]' job.json
		jq -c '.exec.binds = ["/root"]' job.json
		jq -c '.backend = "docker"' job.json
		jq -c 'del(.limits, .compile_limits, .exec, .backend) | .cpus = 2' job.json
		echo '{"language":"python","code":"1","compile_limits":{"timeout_ms":1}}'
		echo '{"language":"python","code":"1","limits":null,"exec":null}')
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 10 ]
	jq -S . job.json > want.json
	printf '%s\n' "${lines[0]}" | jq -S . | diff - want.json
	for i in 1 2; do
		jqe $i '.status == "invalid" and .error == "\"limits\" is computed by sbx-validate and cannot be set: use \"timeout\", \"memory\", \"cpus\" and \"pids\""'
	done
	jqe 3 '.error == "\"compile_limits\" is computed by sbx-validate from the configuration and cannot be set"'
	jqe 4 '.error == "\"exec\" is computed by sbx-validate from the configuration and cannot be set"'
	jqe 5 '.error == "\"exec\" is computed by sbx-validate from the configuration and cannot be set"'
	jqe 6 '.error == "\"backend\" is chosen by the configuration or SBX_BACKEND, not by a request (here: \"native\")"'
	jqe 7 '.status == null and .limits.cpus == 2 and .compile_limits.cpus == 1 and .exec.run == ["./main","a"]'
	jqe 8 '.error == "\"compile_limits\" is computed by sbx-validate from the configuration and cannot be set"'
	jqe 9 '.status == null and .limits.cpus == 0.5 and .exec.run == ["python3","main.py"]'
	[ -z "$stderr" ]
}

@test "files: relative paths only, no .., no NUL, not the program file, within limits" {
	run --separate-stderr v < <(printf '%s\n' \
		'{"language":"python","code":"1","files":{"data/in.txt":"x","b.bin":{"content":"AAEC","encoding":"base64"}}}' \
		'{"language":"python","code":"1","files":{"../etc/passwd":"x"}}' \
		'{"language":"python","code":"1","files":{"/etc/passwd":"x"}}' \
		'{"language":"python","code":"1","files":{"a/../../b":"x"}}' \
		'{"language":"python","code":"1","files":{"a\u0000b":"x"}}' \
		'{"language":"python","code":"1","files":{"main.py":"x"}}' \
		'{"language":"python","code":"1","files":{"a":"x","a/b":"y"}}' \
		'{"language":"python","code":"1","files":{"a":5}}' \
		'{"language":"python","code":"1","files":{"a":{"content":"!!","encoding":"base64"}}}' \
		'{"language":"python","code":"1","files":[1]}' \
		'{"language":"python","code":"1","files":{"a//b":"x"}}')
	jqe 0 '.limits != null and .status == null'
	jqe 1 '.error == "files: path \"../etc/passwd\" contains .."'
	jqe 2 '.error | startswith("files: path \"/etc/passwd\" is absolute")'
	jqe 3 '.error == "files: path \"a/../../b\" contains .."'
	jqe 4 '.error | test("contains a NUL byte")'
	jqe 5 '.error == "files: \"main.py\" would replace the program file"'
	jqe 6 '.error == "files: \"a\" is both a file and a directory"'
	jqe 7 '.error | test("must be a string or")'
	jqe 8 '.error == "files: \"a\": content is not valid base64"'
	jqe 9 '.error == "\"files\" must be an object of path: content, got array"'
	jqe 10 '.error | test("empty component")'
	big=$(head -c 3000000 /dev/zero | tr '\0' 'x')
	printf '{"language":"python","code":"1","files":{"a":"%s","b":"%s"}}\n' "$big" "$big" > big.jsonl
	run --separate-stderr v < big.jsonl
	jqe 0 '.error == "files total 5.7 MiB, exceeds max_files_size 4 MiB"'
}

@test "args and stdin are checked" {
	big=$(head -c 1100000 /dev/zero | tr '\0' 'x')
	printf '%s\n' '{"language":"python","code":"1","args":["a","b"],"stdin":"in"}' '{"language":"python","code":"1","args":"a"}' \
		'{"language":"python","code":"1","args":[1]}' '{"language":"python","code":"1","args":["a\u0000"]}' \
		'{"language":"python","code":"1","stdin":5}' > in.jsonl
	printf '{"language":"python","code":"1","stdin":"%s"}\n' "$big" >> in.jsonl
	run --separate-stderr v < in.jsonl
	jqe 0 '.exec.run == ["python3","main.py","a","b"] and .stdin == "in"'
	jqe 1 '.error == "\"args\" must be an array of strings, got string"'
	jqe 2 '.error == "args[0] must be a string, got number"'
	jqe 3 '.error == "args[0] contains a NUL byte"'
	jqe 4 '.error == "\"stdin\" must be a string, got number"'
	jqe 5 '.error == "stdin is 1.0 MiB, exceeds max_stdin_size 1 MiB"'
}

@test "unknown fields pass through untouched, in order; aliases resolve" {
	run --separate-stderr v <<< '{"task_id":"t-9","language":"py","code":"1","model":{"name":"x","n":[1,2]},"id":"r1"}'
	[ "$status" -eq 0 ]
	jqe 0 '.task_id == "t-9" and .model == {"name":"x","n":[1,2]} and .id == "r1" and .language == "python"'
	[ "$(jqn 0 'keys_unsorted[0:5] | join(",")')" = "task_id,language,code,model,id" ]
}

# bats test_tags=valgrind
@test "a misspelled field is refused with the name it nearly is; language names in any case" {
	run --separate-stderr v < <(
		echo '{"language":"py","code":"1","tiemout":3}'
		echo '{"language":"py","code":"1","Files":{}}'
		echo '{"language":"py","code":"1","memroy":"1m"}'
		echo '{"language":"py","code":"1","cpu":1}'
		echo '{"language":"Python","code":"1","task":"t","lang_hint":"x","timeout_note":"y"}'
		echo '{"language":"C++","code":"int main(){}"}')
	[ "$status" -eq 1 ]
	jqe 0 '.status == "invalid" and .error == "unknown field \"tiemout\": did you mean \"timeout\"?"'
	jqe 1 '.error == "unknown field \"Files\": did you mean \"files\"?"'
	jqe 2 '.error | endswith("did you mean \"memory\"?")'
	jqe 3 '.error | endswith("did you mean \"cpus\"?")'
	jqe 4 '.status == null and .language == "python" and .task == "t" and .lang_hint == "x"'
	jqe 5 '.status == null and .language == "cpp"'
}

@test "records with a final status pass through unchanged" {
	line='{"id":"x","status":"invalid","error":"line 3: nope","language":"cobol","extra":[1,{"a":null}]}'
	run --separate-stderr v <<< "$line"
	[ "$status" -eq 0 ]
	[ "$output" = "$line" ]
}

@test "ids: kept when given, generated when missing, unique across processes" {
	run --separate-stderr v <<< '{"id":42,"language":"python","code":"1"}'
	jqe 0 '.id == 42'
	run --separate-stderr v <<< '{"id":{"a":1},"language":"python","code":"1"}'
	jqe 0 '.error == "\"id\" must be a string or a number, got object"'
	# shown to people: no C0/C1 control, DEL, bidi override or isolate, or
	# line separator; other non-ASCII is fine
	for id in 'a\u0085b' 'a\u009fb' 'a\u0001b' 'a\u007fb' 'a\u202eb' 'a\u2067b' 'a\u200fb' 'a\u2028b'; do
		run --separate-stderr v <<< "{\"id\":\"$id\",\"language\":\"python\",\"code\":\"1\"}"
		jqe 0 '.status == "invalid" and .error == "\"id\" must be 1 to 128 printable characters"'
	done
	run --separate-stderr v <<< '{"id":"tâche-\u00a0-\u4e2d","language":"python","code":"1"}'
	jqe 0 '.id == "tâche-\u00a0-中" and (has("status") | not)'
	for i in $(seq 2000); do echo '{"language":"python","code":"1"}'; done > many.jsonl
	for p in 1 2 3 4; do v < many.jsonl > out$p & done
	wait
	total=$(cat out? | jq -r .id | wc -l)
	unique=$(cat out? | jq -r .id | sort -u | wc -l)
	[ "$total" -eq 8000 ]
	[ "$unique" -eq 8000 ]
}

@test "principal: kept when printable, refused otherwise" {
	run --separate-stderr v <<< '{"language":"python","code":"1","principal":"team-a"}'
	jqe 0 '.principal == "team-a" and (has("status") | not)'
	for p in 7 '""' '"a\u0001b"' '"a\u202eb"' '["x"]'; do
		run --separate-stderr v <<< "{\"language\":\"python\",\"code\":\"1\",\"principal\":$p}"
		jqe 0 '.status == "invalid" and .error == "\"principal\" must be 1 to 128 printable characters"'
	done
}

@test "output is flushed per line (works behind tail -f)" {
	coproc V { "$BIN/sbx-validate"; }
	echo '{"language":"python","code":"1"}' >&"${V[1]}"
	read -r -t 5 line <&"${V[0]}"
	[[ $line == *'"limits"'* ]]
	echo 'nope' >&"${V[1]}"
	read -r -t 5 line <&"${V[0]}"
	[[ $line == *'"line":2'* ]]
	exec {V[1]}>&-
	wait
}

@test "a configured language whose program is missing is invalid, naming it and how to install it" {
	conf=$(conf_with '$a [language.cobol]\nfile = "main.cob"\nrun = ["cobc-not-here", "-x", "main.cob"]\nhint = "apt-get install gnucobol"')
	run --separate-stderr v -c "$conf" <<< '{"language":"cobol","code":"x"}'
	[ "$status" -eq 1 ]
	jqe 0 '.error == "language \"cobol\" is configured but its program \"cobc-not-here\" is not installed (install it: apt-get install gnucobol)"'
}

@test "per-language limits override the defaults and raise their own ceiling" {
	conf=$(conf_with '/^\[language.python\]/a memory = "1536m"\ntimeout = 20')
	run --separate-stderr v -c "$conf" < <(printf '%s\n' '{"language":"python","code":"1"}' '{"language":"bash","code":"1"}' '{"language":"python","code":"1","memory":"1536m"}')
	jqe 0 '.limits.memory_bytes == 1536*1048576 and .limits.timeout_ms == 20000'
	jqe 1 '.limits.memory_bytes == 256*1048576 and .limits.timeout_ms == 10000'
	jqe 2 '.limits.memory_bytes == 1536*1048576'
}

@test "SBX_BACKEND selects the backend written into jobs" {
	run --separate-stderr env SBX_BACKEND=docker "$BIN/sbx-validate" <<< '{"language":"python","code":"1"}'
	jqe 0 '.backend == "docker" and .exec.image == "python:3.12-slim"'
}

@test "install: registry packages only by default; paths, archives, URLs, VCS specs and options refused" {
	sid=$(printf '%032x' 7)
	mkdir -p "$BATS_TEST_TMPDIR/var/sessions/$sid"
	conf=$(conf_with 's/^$//')
	good=(requests "Django==4.2" "numpy>=1.2,<2" "pkg[security,socks]~=1.0" "zope.interface" lodash "lodash@4.17.21"
		"@types/node@20" "@babel/core@^7.0.0" "rails:7.0" "is-number@7.0.0" "left-pad@latest")
	bad=(./mypkg /abs/pkg ../up "x.tar.gz" "x.tgz" "x.whl" "x.zip" "x.gem" "http://127.0.0.1:8/x.tgz" "https://example.com/x"
		"git+https://example.com/x.git" "user/repo" "pkg@file:../x" "pkg@git+ssh://x" "-e ." "--index-url=http://x"
		"pkg @ https://x/y.whl" "pkg; python_version>'3'" "pkg==1.0 --hash" "" "@scope" "pkg[x"
		"file:foo" "file:.." "file:evil.tgz" "npm:other" "git:x" "evil.tbz" "evil.txz" "evil.tar.lzma" "evil.tlz")
	req() { jq -nc --arg s "$sid" --arg p "$1" --arg l "${2:-python}" '{language: $l, session: $s, install: [$p]}'; }
	for p in "${good[@]}"; do
		run --separate-stderr v -c "$conf" <<< "$(req "$p")"
		jqe 0 '.status == null and .exec.network == false' || { echo "refused: $p"; false; }
	done
	for p in "${bad[@]}"; do
		run --separate-stderr v -c "$conf" <<< "$(req "$p")"
		jqe 0 '.status == "invalid"' || { echo "accepted: $p"; false; }
	done
	run --separate-stderr v -c "$conf" <<< "$(req ./mypkg)"
	jqe 0 '.error | contains("not a package of the registry") and contains("install_specs")'
	# install_specs = "any": the package manager's whole alphabet, still no options
	conf=$(conf_with 's/^install_specs *=.*/install_specs = "any"/')
	for p in ./mypkg "x.tgz" "git+https://example.com/x.git" "user/repo"; do
		run --separate-stderr v -c "$conf" <<< "$(req "$p")"
		jqe 0 '.status == null' || { echo "refused with any: $p"; false; }
	done
	run --separate-stderr v -c "$conf" <<< "$(req "-e .")"
	jqe 0 '.status == "invalid"'
	# nor may a request's files reach the installed packages
	run --separate-stderr v -c "$conf" <<< '{"language":"python","code":"1","files":{".deps/evil.so":"x"}}'
	jqe 0 '.status == "invalid" and (.error | contains("installed packages"))'
}

# bats test_tags=valgrind
@test "sessions: inline code in a directory of its own, an entry by its extension, a command; what ran is the code" {
	conf=$(conf_with 's/^$//')
	sid=0123456789abcdef0123456789abcdef
	ws=$BATS_TEST_TMPDIR/var/sessions/$sid
	mkdir -p "$ws"
	printf 'console.log(1)\n' > "$ws/t.js"
	printf 'int main(void){return 0;}\n' > "$ws/main.c"
	ln -s /etc/passwd "$ws/link.py"
	s() { jq -nc --arg s "$sid" "{id: \"j\", session: \$s} + $1"; }
	run --separate-stderr "$BIN/sbx-validate" -c "$conf" < <(
		s '{language: "python", code: "print(1)", files: {"main.py": "mine"}}'
		s '{entry: "t.js", args: ["x"]}'
		s '{command: ["sh", "-c", "echo '"'"'a b'"'"'"]}'
		s '{language: "c", code: "int main(void){return 0;}"}'
		jq -nc '{entry: "t.js"}'
		s '{entry: "t.js", command: ["ls"]}'
		s '{entry: "main.c"}'
		s '{entry: "notes.xyz"}'
		s '{entry: "gone.py"}'
		s '{entry: "link.py"}'
		s '{command: ["ls\u0000 -la"]}'
		s '{command: []}'
		s '{language: "python", code: "1", files: {".sbx-x/main.py": "x"}}'
		s '{entry: "T.JS", language: "JavaScript"}'
		s '{entry: "-c", language: "python", args: ["print(1)"]}')
	[ "$status" -eq 1 ]
	# interpreted: a file of its own at the top (its directory is the workspace's, for imports)
	file=$(jqn 0 .exec.file)
	job0=${lines[0]}
	[[ "$file" =~ ^\.sbx-[0-9a-f]{16}-main\.py$ ]]
	jqe 0 '.exec.dir == null and .exec.run == ["python3", "'"$file"'"] and .exec.workspace_exec == true'
	# compiled: a directory of its own, with its outputs
	dir=$(jqn 3 .exec.dir)
	[[ "$dir" =~ ^\.sbx-[0-9a-f]{16}$ ]]
	[ "${file:0:21}" = "$dir" ] # the same id, the same hash
	jqe 1 '.language == "javascript" and .code == "console.log(1)\n" and .exec.file == null and .exec.run == ["node", "t.js", "x"]'
	jqe 2 '.language == "bash" and .exec.run[0:2] == ["sh", "-c"]'
	[ "$(jqn 2 .code)" = "sh -c 'echo '\\''a b'\\'''" ]
	jqe 3 '(.exec.compile | index("'"$dir"'/main.c") and index("'"$dir"'/main")) and .exec.run == ["'"$dir"'/main"]'
	jqe 4 '.error == "\"entry\" runs in a session'"'"'s workspace: give \"session\""'
	jqe 5 '.error | contains("not more than one")'
	jqe 6 '.error | contains("interpreted languages")'
	jqe 7 '.error | contains("cannot tell the language of \"notes.xyz\"")'
	jqe 8 '.error | contains("gone.py") and contains("No such file")'
	jqe 9 '.error | contains("a link")'
	jqe 10 '.error | contains("NUL")'
	jqe 11 '.error | contains("array of 1 to")'
	jqe 12 '.error | contains("sbx'"'"'s own")'
	jqe 13 '.status == "invalid" and (.error | contains("T.JS"))'
	jqe 14 '.error | contains("begins with \"-\"")'
	# validated again: the same job (the directory follows the id)
	printf '%s\n' "${lines[0]}" | "$BIN/sbx-validate" -c "$conf" | jq -S . > again
	printf '%s\n' "${lines[0]}" | jq -S . | diff - again
	# sbx-run takes only what sbx-validate makes of a session's program
	run --separate-stderr "$BIN/sbx-run" -c "$conf" < <(
		printf '%s\n' "${lines[0]}" | jq -c '.exec.dir = "../x"'
		printf '%s\n' "${lines[0]}" | jq -c '.exec.file = "main.py"'
		printf '%s\n' "${lines[0]}" | jq -c 'del(.exec.workspace) | .exec.file = null'
		printf '%s\n' "${lines[1]}" | jq -c 'del(.exec.workspace)')
	[ "$status" -eq 1 ]
	jqe 0 '.error | contains("exec.dir must be")'
	jqe 1 '.error | contains("never over a workspace file")'
	jqe 2 '.error | contains("exec.file must be a plain file name")'
	jqe 3 '.status == "invalid"'
	# workspace_exec = false: jobs say so, and sbx-run refuses one that claims more
	noexec=$(conf_with 's/^workspace_exec .*/workspace_exec = false/')
	s '{language: "python", code: "1"}' | "$BIN/sbx-validate" -c "$noexec" | jq -e '.exec.workspace_exec == false'
	printf '%s\n' "$job0" | "$BIN/sbx-run" -c "$noexec" | jq -e '.error | contains("workspace_exec = false")'
}
