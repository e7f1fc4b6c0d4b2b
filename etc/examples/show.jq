# Human-readable view of sbx results (used by `make demo`).
def indent: split("\n") | map(select(length > 0) | "    " + .) | join("\n");
"── \(.id // "?") [\(.language // "?")]  \(.status)" + (if .history_id then "  #\(.history_id)" else "" end)
+ (if .exit_code != null and .exit_code != 0 then "  exit \(.exit_code)" else "" end)
+ (if .signal then "  \(.signal)" else "" end)
+ (if .duration_ms and .status != "compile_error" then "  \(.duration_ms) ms" else "" end)
+ (if .compile and .compile.duration_ms then "  (compile \(.compile.duration_ms) ms)" else "" end)
+ (if .error then "\n    error: \(.error)" else "" end)
+ (if (.stdout // "") != "" then "\n  stdout:\n" + (.stdout | indent) else "" end)
+ (if (.stderr // "") != "" then "\n  stderr:\n" + (.stderr | indent) else "" end)
+ (if .status == "compile_error" then "\n  compiler:\n" + (.compile.stderr | split("\n") | .[0:4] | join("\n") | indent) else "" end)
