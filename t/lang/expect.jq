# Results of t/lang's requests (requests.sh) in, the ones that miss their
# case's expectation out, trimmed to what explains the miss.
#   hello          prints "hello"                       success
#   stdin, file    copy stdin / data.txt to stdout      success
#   exit           exits with 3                         error, exit_code 3
#   crash          dies its language's way ("boom")     error, with a signal,
#                                                       or non-zero + "boom"
#   compile_error  (compiled languages)                 compile_error, the
#                  compiler's message names the file (stderr, or stdout: tsc)
#   timeout        spins, with timeout 1                timeout
#   memory         keeps allocating, with memory 128m   memory_limit (within 30 s)
"line one\nline two ü\n" as $data
| (.id | split("/")) as [$lang, $case]
| select(
	if $case == "hello" then .status != "success" or .stdout != "hello\n"
	elif $case == "stdin" or $case == "file" then .status != "success" or .stdout != $data
	elif $case == "exit" then .status != "error" or .exit_code != 3
	elif $case == "crash" then .status != "error" or
		(.signal == null and (.exit_code == 0 or (.stderr | contains("boom") | not)))
	elif $case == "compile_error" then .status != "compile_error" or .compile.status != "error" or .exit_code != null or
		(.compile.stdout + .compile.stderr | contains(if $lang == "java" then "Main.java" else "main." end) | not)
	elif $case == "timeout" then .status != "timeout"
	elif $case == "memory" then .status != "memory_limit"
	else true end)
| {id, status, exit_code, signal, stdout: .stdout[:200], stderr: .stderr[-400:], error,
   compile: (.compile | if . then {status, stdout: .stdout[-400:], stderr: .stderr[-400:]} else null end)}
