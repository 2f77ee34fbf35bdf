#!/bin/sh
# A pipeline that does its job and also misbehaves in its output directory:
# the workspace must publish only the declared outputs. It also records the
# paths it sees, which must be the same in every run.
# usage: e2e_pipeline.sh INPUT.csv OUT_DIR
set -u
awk -F, 'NR > 1 { n++; sum += $2 } END { printf "rows=%d sum=%d\n", n, sum }' "$1" > "$2/summary.txt"
echo "pwd=$(pwd) out=$2 tmp=$TMPDIR pool=$1" > "$2/paths.txt"
echo smuggled > "$2/undeclared.txt"
ln -s /etc/shadow "$2/leak"
mkdir "$2/sub" && echo x > "$2/sub/file"
echo "scratch" > "$TMPDIR/scratch"
