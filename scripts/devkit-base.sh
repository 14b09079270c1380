#!/usr/bin/env bash
# devkit-base.sh REV DIR: the kit of commit REV in DIR (make devkit
# BASE=REV puts it in .devkit/base), built by REV's own scripts/devkit.sh
# without PGO, so that a bigger machine can set a change's "before" beside
# its "after" in one session: devkit-run.sh alternates KIT/base's
# benchtable with the kit's, and AB=base runs KIT/base/loadbench's servers
# beside the kit's in the same rounds. DIR/REV records the commit.
set -euo pipefail
rev=${1:?usage: devkit-base.sh REV DIR}
dir=${2:?usage: devkit-base.sh REV DIR}
cd "$(dirname "$0")/.."
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
full=$(git rev-parse --verify "$rev^{commit}") || { echo "devkit-base: $rev: no such commit" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$full" | tar -x -C "$tmp"
[ -x "$tmp/scripts/devkit.sh" ] || { echo "devkit-base: $rev has no scripts/devkit.sh (older than the kit)" >&2; exit 2; }
rm -rf "$dir"
(cd "$tmp" && GO=${GO:-go} PGO=off ./scripts/devkit.sh "$dir")
# Only what the runs set beside the kit's: benchtable, loadbench and the
# bench/ stubs. The device tool carries 64 MiB in all; Redis, the reactor
# tests and a second loadbench (the same build, PGO off) are the kit's.
rm -rf "$dir/redis" "$dir/reactor.test" "$dir/loadbench-nopgo" "$dir/loadbench.pgo.txt"
echo "$full" >"$dir/REV"
echo "devkit-base: the kit of $full in $dir"
