#!/usr/bin/env bash
# pgo.sh [OUTDIR]: regenerate the PGO profile of cmd/loadbench (make pgo),
# OUTDIR/loadbench.pgo (default profiles/pgo), and beside it
# loadbench.pgo.txt, which says how and where it was taken.
#
# Why one profile for loadbench and how it stays fair: loadbench is one
# binary that holds stepsd, the gnet peer, the net peer (each runs in a
# child process of it) and the load generator (the parent). A PGO build
# compiles every package of the binary with the one profile, so every
# server gets the same treatment only if the profile holds each of them
# in the same measure. The workload below runs each server's child under
# the same cells and rounds (loadbench -cpuprofiles: one CPU profile per
# child, and one of the parent); each of the four profiles is then scaled
# to the same total weight before they are merged, so that no server's
# call edges fall into the cold tail (the compiler's hot threshold is a
# share of the whole profile's weight) because another server took more
# samples on this machine.
#
# The profile is of a build without PGO (-pgo=off), so a refresh depends
# on the source tree and the workload alone, never on the last profile.
#
# The file is not named default.pgo: `go build` and `go test` apply a
# main package's default.pgo to the whole dependency graph (the standard
# library included), so every `make test` and `make bench` would compile
# a second copy of everything. Builds that want it say -pgo=FILE:
# make devkit does (scripts/devkit.sh), and by hand
#   cd bench && go build -pgo=../profiles/pgo/loadbench.pgo -o /tmp/lb ./cmd/loadbench
#
# The workload (fixed; its flags are written into the .txt): loadbench
# -loops 1 (one reactor, one gnet loop, the cells the 16-core targets miss
# most), the full matrix of pipeline 1 and 16 x 1, 16 and 256 connections,
# PGO_ROUNDS rounds (default 3) of PGO_DURATION (default 2s) per cell and
# server, servers in turn; about 2.5 minutes. Take it on a quiet machine:
# on a loaded one the samples are the same code paths but fewer of them.
# PGO_PARTS=DIR keeps the four raw profiles there (DIR/<part>.cpu.prof),
# for go tool pprof.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f go.mod ] && [ -d bench ] || { echo "pgo: not the repository's root: $(pwd)" >&2; exit 2; }
outdir=${1:-profiles/pgo}
rounds=${PGO_ROUNDS:-3}
duration=${PGO_DURATION:-2s}
GO=${GO:-go}
mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The tree the profile is of, told before anything is written: the
# profile's own files (OUTDIR, profiles/pgo by default) are its output,
# not a change to the source it was taken of (a -pgo=off build).
tree=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
exclude=()
case $outdir in /*) ;; *) exclude=(":(exclude)$outdir") ;; esac
if [ "$tree" != unknown ] && ! git diff --quiet HEAD -- . "${exclude[@]}" 2>/dev/null; then
	tree="$tree (with uncommitted changes)"
fi

echo "pgo: building loadbench without PGO"
(cd bench && $GO build -pgo=off -o "$tmp/loadbench" ./cmd/loadbench)
flags=(-loops 1 -servers stepsd,gnet,net -cells 1x1,1x16,1x256,16x1,16x16,16x256
	-rounds "$rounds" -duration "$duration" -warmup 200ms -child-warmup 500ms
	-memory=false -redis-benchmark=false)
echo "pgo: loadbench ${flags[*]} -cpuprofiles DIR"
mkdir "$tmp/prof"
"$tmp/loadbench" "${flags[@]}" -cpuprofiles "$tmp/prof" >"$tmp/table.txt" 2>"$tmp/stderr.txt" || {
	cat "$tmp/stderr.txt" >&2
	echo "pgo: loadbench failed; $outdir left as it was" >&2
	exit 1
}

# samples FILE: the profile's total samples/count.
samples() {
	$GO tool pprof -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { on = 1; next }
		/^Locations/ { on = 0 }
		on && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+:$/ { n += $1 }
		END { print n + 0 }'
}

# Each part scaled to the same total weight, 1,000,000 samples: the
# scale factor is large, so that rounding a scaled sample to an integer
# moves its weight by well under 1%.
const=1000000
parts=(stepsd gnet net load)
report=()
scaled=()
for part in "${parts[@]}"; do
	f=$tmp/prof/$part.cpu.prof
	n=$(samples "$f")
	[ "$n" -gt 0 ] || { echo "pgo: $part's profile has no samples" >&2; exit 1; }
	# pprof divides every value by -divide_by: n/const multiplies by const/n.
	$GO tool pprof -proto -divide_by "$(awk -v n="$n" -v c="$const" 'BEGIN { printf "%.12g", n / c }')" "$f" >"$tmp/$part.scaled.pprof" 2>/dev/null
	report+=("$part: $n samples ($(awk -v n="$n" 'BEGIN { printf "%.1f", n / 100 }') s of CPU), scaled to $(samples "$tmp/$part.scaled.pprof")")
	scaled+=("$tmp/$part.scaled.pprof")
done
$GO tool pprof -proto "${scaled[@]}" >"$tmp/loadbench.pgo" 2>/dev/null
total=$(samples "$tmp/loadbench.pgo")
# The go command's own check that the file is a profile PGO can use.
$GO tool preprofile -i "$tmp/loadbench.pgo" -o "$tmp/pre.txt"
edges=$(( ($(wc -l <"$tmp/pre.txt") - 1) / 3 ))

cp "$tmp/loadbench.pgo" "$outdir/loadbench.pgo"
if [ -n "${PGO_PARTS:-}" ]; then
	mkdir -p "$PGO_PARTS"
	cp "$tmp"/prof/*.cpu.prof "$PGO_PARTS/"
fi
{
	echo "loadbench.pgo: the PGO profile of cmd/loadbench (scripts/pgo.sh, make pgo)"
	echo
	echo "taken:    $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "tree:     $tree"
	echo "go:       $($GO env GOVERSION)"
	echo "machine:  $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "workload: loadbench ${flags[*]} -cpuprofiles DIR (a -pgo=off build)"
	echo
	echo "parts, each scaled to the same total weight before the merge:"
	for r in "${report[@]}"; do echo "  $r"; done
	echo "merged:   $total samples, $edges call edges (go tool preprofile)"
	echo
	echo "the workload's table:"
	cat "$tmp/table.txt"
} >"$outdir/loadbench.pgo.txt"
echo "pgo: wrote $outdir/loadbench.pgo ($edges call edges) and $outdir/loadbench.pgo.txt"
for r in "${report[@]}"; do echo "  $r"; done
