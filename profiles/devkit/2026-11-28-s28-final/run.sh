#!/bin/bash
# Session 28's final 16-core run (copied to .devkit/dev28.sh, carried with the kit).
# Sections in order of priority, each bounded by timeout; everything under /tmp/o,
# tarred into $OUT/s28f.tgz after each section.
set -u
K=.devkit; O=/tmp/o; mkdir -p $O
t0=$(date +%s)
stamp() { echo "## $1 at +$(( $(date +%s) - t0 ))s" >> $O/times.txt; tar czf $OUT/s28f.tgz -C /tmp o; }
stamp start
# 1. issue 19's rows, this kit and the base kit alternated (-count 1)
SCENARIOS='reactor/(Call|FanOut|FanOutBatch|FanOutBatchRun|RealSimple|RealParallel|Wakeup)$|syncprim/MutexContended$' \
  CPUS='16 8 2' COUNT=1 LOOPS=' ' timeout 120 scripts/devkit-run.sh $K $O/bt19
stamp bt19
# 2. FanOut and RealParallel at -count 3, at 16 and 2, both kits
SCENARIOS='reactor/(FanOut|RealParallel)$' CPUS='16 2' COUNT=3 LOOPS=' ' timeout 45 scripts/devkit-run.sh $K $O/fan
stamp fan
# 3. issue 20: 1 reactor, 7 rounds
ROUNDS=7 LOOPS=1 CPUS=' ' timeout 75 scripts/devkit-run.sh $K $O/lb1
stamp lb1
# 4. issue 20: 2, 4, 8 reactors, 5 rounds; redis-benchmark at 8 with -n 3,000,000
RB_N=3000000 ROUNDS=5 LOOPS='2 4 8' CPUS=' ' timeout 200 scripts/devkit-run.sh $K $O/lb248
stamp lb248
# 5. srv5's fixed-vCPU check: both servers on CPU 3, GOMAXPROCS 8
timeout 30 $K/loadbench -loops 1 -servers stepsd,gnet -cells 16x16,16x256 -rounds 7 -duration 500ms -warmup 200ms \
  -child-warmup 500ms -server-cpus 3 -child-procs 8 -requests 20000000 -memory=false -redis-benchmark=false \
  -json $O/lb-cpu3.json > $O/lb-cpu3.txt 2>&1
stamp cpu3
cat $O/times.txt
grep -hE '^## |reactor/|syncprim/MutexContended ' $O/bt19/bt.txt $O/fan/bt.txt | cut -c1-150
grep -h 'summary' $O/lb1/lb.txt $O/lb248/lb.txt
grep -h -A8 '^redis-benchmark' $O/lb248/lb.txt | cut -c1-160
grep -h 'summary\|^| stepsd\|^| gnet' $O/lb-cpu3.txt | cut -c1-160
