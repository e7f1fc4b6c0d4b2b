# Human-readable view of sbx results (used by `make demo`).
def indent: split("\n") | map(select(length > 0) | "    " + .) | join("\n");
"── \(.id // "?") [\(.language // "?")]  \(.verdict // .status)" + (if .history_id then "  #\(.history_id)" else "" end)
+ (if .exit_code != null and .exit_code != 0 then "  exit \(.exit_code)" else "" end)
+ (if .signal then "  \(.signal)" else "" end)
+ (if .duration_ms and .status != "compile_error" then "  \(.duration_ms) ms" else "" end)
+ (if .compile and .compile.duration_ms then "  (compile \(.compile.duration_ms) ms)" else "" end)
+ (if .error then "\n    error: \(.error)" else "" end)
+ (if (.stdout // "") != "" and (.verdict | not) then "\n  stdout:\n" + (.stdout | indent) else "" end)
+ (if (.stderr // "") != "" and (.verdict | not) then "\n  stderr:\n" + (.stderr | indent) else "" end)
+ (if .verdict then "\n  \(.tests_passed) of \(.tests_total) tests passed" + ([.tests[] | "\n    test \(.index)  \(.status)" + (if .diff then "  line \(.diff.line): expected \(.diff.expected | tojson), got \(.diff.got | tojson)" elif .exit_code != null and .exit_code != 0 then "  exit \(.exit_code)" else "" end)] | join("")) else "" end)
+ (if .status == "compile_error" then "\n  compiler:\n" + (.compile.stderr | split("\n") | .[0:4] | join("\n") | indent) else "" end)
