#!/usr/bin/env bash
# Prints the module's package graph as the architecture docs and issue reports quote it: every
# non-test, non-generated package with the module packages it imports, then the ten largest
# packages by lines of non-test Go. Run from the module root (or pass a checkout as $1).
set -euo pipefail
cd "${1:-.}"
module=$(go list -m)
echo "# imports within ${module} (non-test, without gen/)"
go list -f '{{.ImportPath}}:{{range .Imports}} {{.}}{{end}}' ./... |
  grep -v "^${module}/gen/" |
  awk -v m="${module}/" '{
    from = $1; sub(/:$/, "", from); sub(m, "", from); line = from ":"
    for (i = 2; i <= NF; i++) if (index($i, m) == 1 && index($i, m "gen/") != 1) { to = $i; sub(m, "", to); line = line " " to }
    print line
  }'
echo
echo "# the ten largest packages (lines of non-test .go files, generated code excluded)"
go list -f '{{.Dir}} {{.ImportPath}} {{join .GoFiles " "}}' ./... |
  grep -v " ${module}/gen/" |
  while read -r dir pkg files; do
    [ -n "${files}" ] || continue
    n=$(cd "${dir}" && cat ${files} | wc -l)
    echo "${n} ${pkg#${module}/}"
  done | sort -rn | head -n 10
