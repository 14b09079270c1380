#!/usr/bin/env bash
# Session 24's final 16-core run, from the kit of `make devkit`:
#   profiles/devkit/2026-11-27-s24-final/run.sh .devkit OUT
# 1. scripts/devkit-run.sh with ROUNDS=6 (loadbench's many-core method:
#    servers in turn, six 500 ms runs per cell, medians of the paired
#    ratios to gnet; servers on half the CPUs, the load generator on the
#    rest) after benchtable -scenarios 'reactor/|syncprim/' -count 1 at
#    -cpus 16, 8, 2 and the idle Group;
# 2. fan.txt: the fan-out rows again at -count 3, at -cpus 16 and 2.
set -uo pipefail
K=${1:?usage: run.sh KIT OUT}; O=${2:?usage: run.sh KIT OUT}
mkdir -p "$O"
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
ROUNDS=${ROUNDS:-6} COUNT=1 "$here/../../../scripts/devkit-run.sh" "$K" "$O"
echo "devkit-run took $(( $(date +%s) - start ))s" >>"$O/times.txt"
K=$(cd "$K" && pwd)
for c in 16 2; do
	echo "## benchtable -scenarios 'reactor/(FanOut|RealParallel)\$' -cpus $c -count 3 -o -"
	(cd "$K/bench" && ../benchtable -scenarios 'reactor/(FanOut|RealParallel)$' -cpus "$c" -count 3 -o - 2>/dev/null)
done >"$O/fan.txt" 2>&1
echo "all took $(( $(date +%s) - start ))s" >>"$O/times.txt"
