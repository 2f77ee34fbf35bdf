#!/bin/sh
# Happy path: summarise a CSV from a read-only pool into a declared output.
# usage: csv_summary.sh INPUT.csv OUTPUT.txt
set -eu
awk -F, 'NR > 1 { n++; sum += $2 } END { printf "rows=%d sum=%d\n", n, sum }' "$1" > "$2"
echo "wrote $2"
