#!/usr/bin/env bash
# devkit-run.sh KIT OUT: the many-core tables of issues 19 and 20 from a kit
# that make devkit built (scripts/devkit.sh), on a machine without Go.
# Writes under OUT:
#   machine.txt     the CPUs, memory and kernel
#   idle.txt        an idle Group of 16 reactors, process CPU over 10s
#   bt.txt          benchtable -scenarios 'reactor/|syncprim/' at -cpus 16, 8
#                   and 2 (with KIT/base, an older kit, alternated with it)
#   lb.txt          loadbench at 1, 2, 4 and 8 reactors: stepsd beside gnet
#                   (and net at 8), with redis-benchmark against stepsd, gnet
#                   and redis-server at 8 when KIT/redis holds them
#   lb-N.json       loadbench's -json at N reactors (every round of every cell)
# COUNT (default 1) is benchtable's -count, CPUS (default "16 8 2") its
# -cpus values (CPUS=' ' skips benchtable), SCENARIOS its -scenarios; LOOPS
# (default "1 2 4 8") the reactor counts of loadbench (LOOPS=' ' skips it).
# loadbench's method on many cores (profiles/notes/2026-11-27-loadbench-round8.md):
# ROUNDS (default 5) runs of every cell per server, the servers in turn, the
# medians and their ranges reported; SERVER_CPUS (default half) the servers'
# CPUs, the load generator on the others (SERVER_CPUS='' shares every CPU,
# as before); DURATION (default 500ms) and WARMUP (default 200ms) each
# run's measured and unmeasured time, CHILD_WARMUP (default 500ms) each
# server's unmeasured load before its first round; RB_N (default 4,000,000)
# redis-benchmark's -n per test at 8 reactors (at 1,000,000 a test ends in
# 0.25-0.5 s on 16 cores, and its own ramp-up caps the figure: session 24's
# final run read 2.0 M SET/s for stepsd and gnet alike); REQUESTS (default 20,000,000) its
# bound on a run's requests (loadbench's own 2,000,000 ends a fast server's
# cell on many cores before DURATION). With the defaults, loadbench takes
# about 6 cells x 2 servers x 5 rounds x 0.7s + 2 x 0.5s = 43s per reactor
# count (65s at 8, with net, plus about 15s of redis-benchmark; 47s measured
# for 1 reactor on 2 CPUs, setup included): about 4 minutes for 1, 2, 4 and
# 8; benchtable at -count 1 adds about 100s.
# PGO A/B: the kit's loadbench is the PGO build and loadbench-nopgo the same
# tree without (make devkit). LB (default loadbench) picks the one that
# runs; AB=1 runs both in the same rounds under LB's load generator
# (loadbench -exe-b KIT/loadbench-nopgo): every server twice, the @b rows
# from loadbench-nopgo with their ratios to gnet@b, which doubles
# loadbench's time (about 8 minutes for 1, 2, 4 and 8 reactors).
# Base A/B: AB=base runs KIT/base/loadbench (an older commit's kit, make
# devkit BASE=<rev>) as the @b servers beside LB, which then defaults to
# loadbench-nopgo, as the base kit is built without PGO: the same servers
# before and after a change, in the same rounds.
set -uo pipefail
kit=$(cd "${1:?usage: devkit-run.sh KIT OUT}" && pwd)
mkdir -p "${2:?usage: devkit-run.sh KIT OUT}"
out=$(cd "$2" && pwd)
count=${COUNT:-1}
cpuses=${CPUS:-16 8 2}
scenarios=${SCENARIOS:-reactor/|syncprim/}
loops=${LOOPS:-1 2 4 8}
duration=${DURATION:-500ms}
warmup=${WARMUP:-200ms}
rounds=${ROUNDS:-5}
childwarmup=${CHILD_WARMUP:-500ms}
servercpus=${SERVER_CPUS-half}
requests=${REQUESTS:-20000000}
rbn=${RB_N:-4000000}
ab=${AB:-0}
if [ "$ab" = base ]; then
	lb=$kit/${LB:-loadbench-nopgo}
	exeb=$kit/base/loadbench
else
	lb=$kit/${LB:-loadbench}
	exeb=$kit/loadbench-nopgo
fi
[ -x "$lb" ] || { echo "devkit-run: $lb: no such program in the kit" >&2; exit 2; }
case $ab in
0) ;;
1 | base)
	[ -x "$exeb" ] || {
		echo "devkit-run: AB=$ab needs $exeb (AB=1: a kit from make devkit after the PGO round 10 note; AB=base: make devkit BASE=<rev>)" >&2
		exit 2
	}
	;;
*)
	echo "devkit-run: AB=$ab: want 0, 1 (PGO against not) or base (KIT/base against the kit)" >&2
	exit 2
	;;
esac
[ -d "$kit/redis/bin" ] && export PATH="$kit/redis/bin:$PATH"

{
	date -u
	uname -a
	nproc
	grep -m1 'model name' /proc/cpuinfo
	grep MemTotal /proc/meminfo
	cat /proc/loadavg
	# which CPUs are hyperthreads of one core: -server-cpus half gives the
	# servers whole cores first
	for c in /sys/devices/system/cpu/cpu[0-9]*; do
		echo "$(basename "$c"): core $(cat "$c/topology/core_id" 2>/dev/null) package $(cat "$c/topology/physical_package_id" 2>/dev/null) siblings $(cat "$c/topology/thread_siblings_list" 2>/dev/null)"
	done
} >"$out/machine.txt" 2>&1

# The idle group runs beside the tables: parked reactors use no CPU whatever
# the rest of the machine does, and the test reads its own process's time.
ASYNCSTEPS_IDLE_WINDOW=10s "$kit/reactor.test" -test.run '^TestIdleGroupUsesNoCPU$' -test.v >"$out/idle.txt" 2>&1 &
idle=$!

bt() { # bt KITDIR CPUS
	echo "## $1 -cpus $2: benchtable -scenarios '$scenarios' -cpus $2 -count $count -o -"
	(cd "$1/bench" && ../benchtable -scenarios "$scenarios" -cpus "$2" -count "$count" -o - 2>>"$out/stderr.txt")
	echo
}
for cpus in $cpuses; do
	[ -x "$kit/base/benchtable" ] && bt "$kit/base" "$cpus"
	bt "$kit" "$cpus"
done >"$out/bt.txt" 2>&1

newlb=
if [ -n "${loops// /}" ]; then
	# (no pipe into grep -q: with pipefail, the help cut short reads as a failure)
	case $("$lb" -h 2>&1) in *" -rounds"*) newlb=1 ;; esac
fi
for n in $loops; do
	servers=stepsd,gnet
	rb=-redis-benchmark=false
	if [ "$n" = 8 ]; then
		servers=stepsd,gnet,net
		rb="-rb-cells 16x50,16x256 -rb-tests set,get -rb-threads 8 -rb-n $rbn"
	fi
	method="-rounds $rounds -child-warmup $childwarmup"
	if [ "$ab" != 0 ]; then
		servers="$servers,$(echo "$servers" | sed 's/\([^,]*\)/\1@b/g')"
		method="$method -exe-b $exeb"
	fi
	[ -n "$servercpus" ] && method="$method -server-cpus $servercpus"
	if [ -z "$newlb" ]; then
		# A kit built before -rounds (one of an older commit's): its
		# loadbench would refuse the flags and leave no table at all.
		echo "## NOTE: $lb has no -rounds (a kit older than the loadbench round 8 note): one run per cell, server and load sharing every CPU, NOT the method ROUNDS/SERVER_CPUS ask for"
		method=
	fi
	echo "## $(basename "$lb") -loops $n -servers $servers -duration $duration -warmup $warmup $method -requests $requests -memory=false $rb"
	start=$(date +%s)
	# shellcheck disable=SC2086 # $rb and $method are several words
	"$lb" -loops "$n" -servers "$servers" -duration "$duration" -warmup "$warmup" $method -requests "$requests" -memory=false $rb -json "$out/lb-$n.json" 2>&1 | grep -v '^  -P\|^  pipeline=\|: throughput matrix\|: redis-benchmark$\|^throughput matrix: '
	echo "## took $(( $(date +%s) - start ))s"
	echo
done >"$out/lb.txt" 2>&1

wait "$idle"
echo "devkit-run: tables in $out"
