#!/usr/bin/env bash
# Session 24's 16-core run of main: issue 19's rows and issue 20's matrix,
# from the kit of `make devkit`, on a machine without Go:
#   profiles/devkit/2026-11-27-s24-start/run.sh .devkit OUT
# bt/     scripts/devkit-run.sh with LOOPS=' ': benchtable -scenarios
#         'reactor/|syncprim/' -count 1 at -cpus 16, 8, 2 and the idle Group
# lb.txt  two rounds of loadbench at 1, 2, 4, 8 reactors, stepsd beside gnet
# rb.txt  loadbench at 8 reactors with redis-benchmark -P 16 -c 50/256
#         --threads 8 -n 4,000,000 against stepsd, gnet and redis-server
set -uo pipefail
K=$(cd "${1:?usage: run.sh KIT OUT}" && pwd); O=${2:?usage: run.sh KIT OUT}
mkdir -p "$O"; O=$(cd "$O" && pwd)
export PATH="$K/redis/bin:$PATH"
start=$(date +%s)
COUNT=${COUNT:-1} CPUS=${CPUS:-16 8 2} LOOPS=' ' "$(dirname "$0")/../../../scripts/devkit-run.sh" "$K" "$O/bt"
echo "bt took $(( $(date +%s) - start ))s" >>"$O/times.txt"
D=${DURATION:-1s}
for round in 1 2; do
	for n in ${LB_LOOPS:-1 2 4 8}; do
		echo "## round $round: loadbench -loops $n -servers stepsd,gnet -duration $D -requests 20000000 -memory=false -redis-benchmark=false"
		"$K/loadbench" -loops "$n" -servers stepsd,gnet -duration "$D" -requests 20000000 -memory=false -redis-benchmark=false 2>&1 | grep -E '^\||^go'
		echo
	done
done >"$O/lb.txt" 2>&1
echo "lb took $(( $(date +%s) - start ))s" >>"$O/times.txt"
echo "## loadbench -loops 8 -servers stepsd,gnet -cells 16x256 -duration $D -requests 20000000 -memory=false -rb-cells 16x50,16x256 -rb-tests set,get -rb-threads 8 -rb-n ${RBN:-4000000}" >"$O/rb.txt"
"$K/loadbench" -loops 8 -servers stepsd,gnet -cells 16x256 -duration "$D" -requests 20000000 -memory=false -rb-cells 16x50,16x256 -rb-tests set,get -rb-threads 8 -rb-n "${RBN:-4000000}" >>"$O/rb.txt" 2>&1
echo "rb took $(( $(date +%s) - start ))s" >>"$O/times.txt"
