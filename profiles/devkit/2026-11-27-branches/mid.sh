#!/usr/bin/env bash
# mid-session 16-core check: branch kits side by side
K=$(cd "$(dirname "$0")" && pwd); O=${1:?}
S='reactor/(Call|FanOut|FanOutBatchRun|RealSimple|RealParallel|Wakeup)$|syncprim/MutexContended$'
for k in base main call wait; do
  echo "## $k: benchtable -scenarios '$S' -cpus 16 -count 1 -o -"
  (cd $K/$k/bench && ../benchtable -scenarios "$S" -cpus 16 -count 1 -o - 2>/dev/null | grep '^|')
done > $O/bt16.txt 2>&1
for n in 8 1; do
  echo "## main: loadbench -loops $n -servers stepsd,stepsd-shared,gnet -cells 16x16,16x256 -duration 1s -requests 20000000 -memory=false -redis-benchmark=false"
  $K/main/loadbench -loops $n -servers stepsd,stepsd-shared,gnet -cells 16x16,16x256 -duration 1s -requests 20000000 -memory=false -redis-benchmark=false 2>/dev/null | grep -E '^\| (stepsd|gnet)'
done > $O/lb.txt 2>&1
