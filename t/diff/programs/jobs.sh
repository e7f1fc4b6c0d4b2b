# Bash: pipelines, background jobs and wait, subshells, mktemp, traps,
# here-documents and process substitution.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 20); do
	(sleep 0.0$((i % 5)); echo "$i" > "$tmp/$i") &
done
wait
echo "background jobs wrote $(ls "$tmp" | wc -l) files"
seq 1 10000 | awk '{ s += $1 } END { print "pipeline sum " s }'
sort -n <(printf '3\n1\n2\n') | paste -sd, -
cat <<DOC | tr a-z A-Z
here-document
DOC
id -un >/dev/null && [ -w "$HOME" ] && echo "user known, home writable"
grep -c . /etc/passwd >/dev/null && echo "passwd readable"
printf 'x%.0s' $(seq 1 1000) | wc -c
