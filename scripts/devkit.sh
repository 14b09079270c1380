#!/usr/bin/env bash
# devkit.sh [DIR]: a self-contained benchmark kit for a machine without Go
# (make devkit): static (CGO_ENABLED=0) benchtable and loadbench, plus the
# one-line go.mod files benchtable looks for to find the repository's root
# and its bench module. DIR (default .devkit) is git-ignored.
#
# On the bigger machine, copy DIR there and run, from DIR/bench:
#   ../benchtable -scenarios 'reactor/|syncprim/' -cpus 16 -count 3 -o - > bt16.txt
#   ../benchtable -scenarios 'reactor/|syncprim/' -cpus 8  -count 3 -o - > bt8.txt
#   ../benchtable -scenarios 'reactor/|syncprim/' -cpus 2  -count 3 -o - > bt2.txt
# and, from DIR, the server: ./loadbench -h lists its flags, e.g.
#   ./loadbench -loops 8 -duration 1s -servers stepsd,gnet,net
# benchtable's abi/ and server/ suites call the go tool, so the kit runs the
# reactor/, syncprim/ and engine/ suites, and loadbench directly.
set -euo pipefail
dir=${1:-.devkit}
cd "$(dirname "$0")/.."
[ -f go.mod ] && [ -d bench ] || { echo "devkit: not the repository's root: $(pwd)" >&2; exit 2; }
mkdir -p "$dir/bench"
case $dir in /*) out=$dir ;; *) out=$(pwd)/$dir ;; esac
(cd bench && CGO_ENABLED=0 ${GO:-go} build -o "$out/benchtable" ./cmd/benchtable)
(cd bench && CGO_ENABLED=0 ${GO:-go} build -o "$out/loadbench" ./cmd/loadbench)
head -n 1 go.mod > "$out/go.mod"
head -n 1 bench/go.mod > "$out/bench/go.mod"
du -sh "$out"
echo "devkit: kit in $out; run it from $out/bench (see scripts/devkit.sh)"
