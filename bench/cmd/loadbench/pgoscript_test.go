package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo stands in for the go command in TestPGOScriptTreeLine: "build -o
// F" writes a loadbench that writes the four profiles -cpuprofiles asks
// for, and "tool pprof", "tool preprofile" and "env" answer as much as
// scripts/pgo.sh reads of them.
const fakeGo = `#!/usr/bin/env bash
set -euo pipefail
case "$1 ${2:-}" in
"build "*)
	out=
	while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
	cat >"$out" <<'LB'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = -cpuprofiles ] && dir=$2; shift; done
for p in stepsd gnet net load; do echo "$p" >"$dir/$p.cpu.prof"; done
echo "the workload's table"
LB
	chmod +x "$out" ;;
"tool pprof")
	if [ "$3" = -raw ]; then printf 'Samples:\nsamples/count\n     10   1: 1\nLocations\n'; else echo "merged profile $RANDOM"; fi ;;
"tool preprofile")
	shift 2
	while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
	printf 'GO PREPROFILE V1\ncaller\ncallee\n1 1\n' >"$out" ;;
"env GOVERSION") echo go-fake ;;
*) echo "fake go: $*" >&2; exit 2 ;;
esac
`

// TestPGOScriptTreeLine runs scripts/pgo.sh (make pgo) in a committed
// copy of the files it needs, with a stand-in go command: the
// loadbench.pgo.txt it writes names the commit and, the tree being clean,
// no uncommitted changes. The profile it writes over (profiles/pgo is
// where the committed one lives) is its output, not a change to the tree
// the profile was taken of.
func TestPGOScriptTreeLine(t *testing.T) {
	for _, p := range []string{"bash", "git", "awk"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s: %v", p, err)
		}
	}
	script, err := os.ReadFile("../../../scripts/pgo.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/x\n", 0o644)
	write("bench/go.mod", "module example.com/x/bench\n", 0o644)
	write("scripts/pgo.sh", string(script), 0o755)
	write("profiles/pgo/loadbench.pgo", "the last profile\n", 0o644)
	write("profiles/pgo/loadbench.pgo.txt", "how the last one was taken\n", 0o644)
	write("fakego", fakeGo, 0o755)
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		// The user's and the system's git configuration left out (a
		// commit.gpgsign there would fail the commit).
		cmd.Env = append(os.Environ(), "GO="+filepath.Join(dir, "fakego"),
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("git", "init", "-q")
	run("git", "add", ".")
	run("git", "commit", "-qm", "x")
	head := strings.TrimSpace(run("git", "rev-parse", "--short", "HEAD"))
	for i := range 2 { // the second refresh finds the first's output uncommitted
		run("./scripts/pgo.sh")
		txt, err := os.ReadFile(filepath.Join(dir, "profiles/pgo/loadbench.pgo.txt"))
		if err != nil {
			t.Fatal(err)
		}
		var tree string
		for _, line := range strings.Split(string(txt), "\n") {
			if strings.HasPrefix(line, "tree:") {
				tree = line
			}
		}
		if want := "tree:     " + head; tree != want {
			t.Errorf("refresh %d: %q, want %q (a clean tree)", i+1, tree, want)
		}
	}
	// A change to the source is reported.
	write("bench/x.go", "package x\n", 0o644)
	run("git", "add", "bench/x.go")
	run("./scripts/pgo.sh")
	txt, _ := os.ReadFile(filepath.Join(dir, "profiles/pgo/loadbench.pgo.txt"))
	if !strings.Contains(string(txt), "tree:     "+head+" (with uncommitted changes)") {
		t.Errorf("a tree with a staged change: no uncommitted changes reported:\n%s", txt)
	}
}
