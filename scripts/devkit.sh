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
# (loadbench is the PGO build, loadbench-nopgo the same tree without: see
# below; PGO=FILE names the profile, PGO=off builds both without).
# benchtable's abi/ and server/ suites call the go tool, so the kit runs the
# reactor/, syncprim/ and engine/ suites, and loadbench directly.
#
# Where redis-server and redis-benchmark are installed here, the kit carries
# them too, with the shared libraries they load and the loader that loads
# them (DIR/redis; a machine without apt or network can still run the
# redis-benchmark rows against a real Redis):
#   PATH=$PWD/redis/bin:$PATH ./loadbench -rb-cells 16x50 -rb-threads 8 ...
# And the reactor package's tests as a static binary, for the idle-group
# figure on a machine of many cores:
#   ASYNCSTEPS_IDLE_WINDOW=10s ./reactor.test -test.run '^TestIdleGroupUsesNoCPU$' -test.v
set -euo pipefail
dir=${1:-.devkit}
cd "$(dirname "$0")/.."
[ -f go.mod ] && [ -d bench ] || { echo "devkit: not the repository's root: $(pwd)" >&2; exit 2; }
mkdir -p "$dir/bench"
case $dir in /*) out=$dir ;; *) out=$(pwd)/$dir ;; esac
(cd bench && CGO_ENABLED=0 ${GO:-go} build -trimpath -ldflags="-s -w" -o "$out/benchtable" ./cmd/benchtable)
# loadbench twice: with the PGO profile $PGO (make devkit's default
# profiles/pgo/loadbench.pgo, from make pgo; PGO=off for none) and without
# (loadbench-nopgo), so that the bigger machine can set them side by side
# in the same rounds: AB=1 scripts/devkit-run.sh, or by hand
#   ./loadbench -exe-b ./loadbench-nopgo -servers stepsd,gnet,stepsd@b,gnet@b ...
# benchtable and reactor.test stay without PGO: the profile is the
# servers', and their rows are the engine's and the reactor's.
pgo=${PGO:-off}
case $pgo in
off) ;;
/*) ;;
*) pgo=$(pwd)/$pgo ;;
esac
if [ "$pgo" != off ] && [ ! -f "$pgo" ]; then
	echo "devkit: PGO profile $pgo not found (make pgo writes it; PGO=off builds without)" >&2
	exit 2
fi
(cd bench && CGO_ENABLED=0 ${GO:-go} build -trimpath -pgo="$pgo" -ldflags="-s -w" -o "$out/loadbench" ./cmd/loadbench)
(cd bench && CGO_ENABLED=0 ${GO:-go} build -trimpath -pgo=off -ldflags="-s -w" -o "$out/loadbench-nopgo" ./cmd/loadbench)
rm -f "$out/loadbench.pgo.txt"
if [ "$pgo" != off ]; then
	# what the profile was taken from, beside the binaries it built
	[ -f "$pgo.txt" ] && cp "$pgo.txt" "$out/loadbench.pgo.txt"
	echo "devkit: loadbench built with -pgo=$pgo, loadbench-nopgo without"
else
	echo "devkit: loadbench and loadbench-nopgo both built without PGO (PGO=off)"
fi
CGO_ENABLED=0 ${GO:-go} test -c -trimpath -ldflags="-s -w" -o "$out/reactor.test" ./reactor
head -n 1 go.mod > "$out/go.mod"
head -n 1 bench/go.mod > "$out/bench/go.mod"
# bundle PROGRAM...: copy each program, the libraries ldd names for it and
# the loader into $out/redis, with a wrapper per program in $out/redis/bin
# that runs it through the carried loader and libraries.
bundle() {
	local r=$out/redis p real lib loader=
	rm -rf "$r"
	mkdir -p "$r/bin" "$r/lib" "$r/libexec"
	for p in "$@"; do
		real=$(readlink -f "$(command -v "$p")")
		cp "$real" "$r/libexec/$p"
		for lib in $(ldd "$real" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}'); do
			case $lib in */ld-linux*) loader=$(basename "$lib") ;; esac
			cp -L "$lib" "$r/lib/"
		done
		[ -n "$loader" ] || { echo "devkit: no loader found for $p" >&2; return 1; }
		printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")/..\nexec "$d/lib/%s" --library-path "$d/lib" "$d/libexec/%s" "$@"\n' "$loader" "$p" > "$r/bin/$p"
		chmod +x "$r/bin/$p"
	done
}
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	bundle redis-server redis-benchmark
	"$out/redis/bin/redis-server" --version
else
	echo "devkit: redis-server or redis-benchmark not installed here: the kit has no redis/ (loadbench skips those rows)"
fi
du -sh "$out"
echo "devkit: kit in $out; run it from $out/bench (see scripts/devkit.sh)"
