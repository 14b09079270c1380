#!/bin/sh
# Build the reference's bench programs by hand (no CMake/hunter).
# usage: CPPREF=DIR build.sh OUTDIR "EXTRA FLAGS" (OUTDIR relative to DIR)
set -e
here=$(cd "$(dirname "$0")" && pwd)
cd "${CPPREF:-/tmp/cppref}"  # src/: core-cpp-ri-asyncsteps a13074f, api/: core-cpp-api 089967d
out=${1:-build}; extra=${2:-}
mkdir -p $out
CXX="g++ -std=c++11 -O2 $extra -Wall -Wextra -Isrc/include -Iapi/include"
for f in src/src/asyncsteps.cpp src/src/asynctool.cpp src/src/binaryapi.cpp src/src/limiter.cpp src/src/mutex.cpp src/src/throttle.cpp api/src/all.cpp; do
  o=$out/$(basename $f .cpp).o
  echo "$CXX -c $f -o $o"; $CXX -c $f -o $o &
done
wait
for b in futoin_asyncsteps futoin_nitrosteps; do
  echo "$CXX -c src/bench/$b.bench.cpp -o $out/$b.bench.o"; $CXX -c src/bench/$b.bench.cpp -o $out/$b.bench.o &
done
wait
for b in futoin_asyncsteps futoin_nitrosteps; do
  echo "g++ -O2 -o $out/$b.bench $out/$b.bench.o $out/asyncsteps.o $out/asynctool.o $out/binaryapi.o $out/limiter.o $out/mutex.o $out/throttle.o $out/all.o -lboost_timer -lboost_chrono -lboost_system -pthread"
  g++ -O2 -o $out/$b.bench $out/$b.bench.o $out/asyncsteps.o $out/asynctool.o $out/binaryapi.o $out/limiter.o $out/mutex.o $out/throttle.o $out/all.o -lboost_timer -lboost_chrono -lboost_system -pthread
done
# The supplementary rows (Turn, EmptyIteration, Mutex section; not the reference's programs).
echo "$CXX -o $out/extra.bench $here/extra.bench.cpp ..."
$CXX -o $out/extra.bench $here/extra.bench.cpp $out/asyncsteps.o $out/asynctool.o $out/binaryapi.o $out/limiter.o $out/mutex.o $out/throttle.o $out/all.o -pthread
