#!/bin/bash
# Worktrees sharing one repository's vectors (issue 40; docs/benchmarks.md): clones REPO,
# indexes the first commit of LIST cold, then adds a worktree at each other commit of LIST
# and indexes it once; prints each `index` line with its time and peak memory, then the disk
# of one worktree's index, of the shared vectors and of all the worktrees' indexes.
# usage: xtask/worktrees-bench.sh MCP_SERVER REPO LIST OUTDIR
#   LIST: one "<commit> <date>" per line, newest first (e.g. git log --first-parent --format="%H %cs", thinned)
set -euo pipefail
BIN=$1; REPO=$2; LIST=$3; OUT=$4
rm -rf "$OUT"; mkdir -p "$OUT"
git clone -q "$REPO" "$OUT/main"
git -C "$OUT/main" checkout -q --detach "$(head -1 "$LIST" | cut -d' ' -f1)"
/usr/bin/time -f "%e s %M KB" "$BIN" --root "$OUT/main" index 2>&1 | tail -2 | tr '\n' ' '; echo " [cold]"
i=0
tail -n +2 "$LIST" | while read -r commit date; do
  i=$((i + 1))
  git -C "$OUT/main" worktree add -q --detach "$OUT/w$i" "$commit"
  /usr/bin/time -f "%e s %M KB" "$BIN" --root "$OUT/w$i" index 2>&1 | tail -2 | tr '\n' ' '; echo " [$date]"
done
du -s "$OUT/main/.codectx" | awk '{print "one worktree index: " $1/1024 " MB"}'
du -s "$OUT/main/.git/codectx" | awk '{print "shared vectors: " $1/1024 " MB"}'
du -sc "$OUT/main/.codectx" "$OUT"/w*/.codectx | tail -1 | awk '{print "all worktree indexes: " $1/1024 " MB"}'
