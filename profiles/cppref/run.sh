#!/bin/sh
# run.sh [BUILD_DIR] [which: asyncsteps|nitrosteps|extra|all]
# One round of every C++ row; prints "ROW IMPL ns/UNIT" lines.
# Units (as the issue's): Simple per op (1e6 ops), Parallel per flow
# (33 batches x 30,000 = 990,000 flows: the reference's 1e6/3e4 rounds down),
# ParallelWaitLoop per loop iteration (1e7; the driver may overshoot by < 30,000).
# The extra rows (Turn, EmptyIteration, Mutex section) are NOT the reference's
# programs: extra/extra.bench.cpp, written for this measurement.
set -e
d=${1:-${CPPREF:-/tmp/cppref}/build}; which=${2:-all}
ref() { # $1 binary, $2 impl name
  out=$("$d/$1"); printf '%s\n' "$out" >&2
  printf '%s\n' "$out" | awk -v impl="$2" '
    /^Simple:/           { printf "Simple %s %.1f ns/op\n", impl, $2*1e9/1e6 }
    /^Parallel:/         { printf "Parallel %s %.1f ns/flow\n", impl, $2*1e9/990000 }
    /^ParallelWaitLoop:/ { printf "ParallelWaitLoop %s %.1f ns/loop\n", impl, $2*1e9/1e7 }'
}
case $which in all|asyncsteps) ref futoin_asyncsteps.bench AsyncSteps;; esac
case $which in all|nitrosteps) ref futoin_nitrosteps.bench NitroSteps;; esac
case $which in all|extra) out=$("$d/extra.bench"); printf '%s\n' "$out" >&2; printf '%s\n' "$out" | awk '
    /^Turn\//           { print "Turn AsyncTool", $2, "ns/turn" }
    /^EmptyIteration\// { print "EmptyIteration AsyncTool", $2, "ns/iter" }
    /^SimpleLoopIter\// { split($1, a, "/"); sub(":", "", a[2]); print "SimpleLoopIter", a[2], $2, "ns/op" }
    /^MutexSection\//   { split($1, a, "/"); sub(":", "", a[2]); g=$4; gsub(/[(+)]/, "", g); print "MutexSection", a[2], $2, "ns/op"; print "MutexDelta", a[2], g, "ns/op" }';;
esac
