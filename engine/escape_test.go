package engine

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// hotStrict are the hot-path functions in which the compiler's escape
// analysis may report nothing at all: no variable moved to the heap, no
// value escaping. Each would be an allocation per step or per value.
var hotStrict = []string{
	"Int", "Uint", "Float", "Bool", "Str", "Bytes",
	"Args.set", "Args.reset", "Args.At", "Args.Len",
	"Steps.Success", "Steps.Arg", "Steps.Args", "Steps.External", "Steps.Execute",
	"Steps.enqueue", "Steps.dequeue", "Steps.reset",
	"engine.newFrame", "engine.releaseFrame", "engine.run", "engine.exec",
	"engine.advance", "engine.advanceFast", "engine.afterCallback",
	"engine.releasePlain", "engine.reuseIteration", "engine.detachFlow",
	"engine.loopNext", "engine.ready", "engine.RunReady", "engine.runBatch", "engine.driveOn",
	"External.Success",
	"New", "engine.takeBuild", "engine.refillBuild", "root.takeShared",
	"engine.prepareStart", "engine.attachFlow", "engine.finishRoot", "root.endRunWith",
	"root.name",
	"callLocked", "engine.leftPlainly", "engine.leaveCompleted", "engine.completed",
	"Steps.Holds", "Steps.lockedBy",
}

// hotNoMove are hot functions whose only escapes are messages built on
// their misuse paths (a string concatenation that runs only then): no
// variable of theirs may be moved to the heap.
var hotNoMove = []string{
	"Steps.Add", "Steps.addFrame", "Steps.current", "root.buildFrame",
	"addLocked",
}

// coldEscapes are the escapes inside hotStrict functions that sit on a
// branch the hot path never takes: each allocates only when that branch
// runs. Keyed by function, then by the compiler's message.
var coldEscapes = map[string]map[string]string{
	"Str":                 {"new(string) escapes to heap": "strings over 4 GiB only"},
	"Bytes":               {"new([]byte) escapes to heap": "slices over 4 GiB only"},
	"Steps.Args":          {"&Args{} escapes to heap": "a misuse: Args off the running step"},
	"Steps.Execute":       {"&Error{...} escapes to heap": "Execute on a closed reactor"},
	"engine.newFrame":     {"&Steps{...} escapes to heap": "grow, inlined: frameChunk frames when the free list runs dry"},
	"engine.refillBuild":  {"&Steps{...} escapes to heap": "grow, inlined: frameChunk frames when the free list runs dry"},
	"New":                 {"&root{} escapes to heap": "a fresh root: the one allocation of a root never Released (pooled roots take none)"},
	"engine.prepareStart": {"append escapes to heap": "namedStarted, inlined: the first flow of a name new to this reactor"},
	"engine.attachFlow":   {"&flow{...} escapes to heap": "the loop's root-flow pool is empty: once per flow it ever holds"},
	"root.endRunWith":     {"&Error{...} escapes to heap": "a Promise of a flow that failed"},
}

var escapeLine = regexp.MustCompile(`^\./([^:]+\.go):(\d+):\d+: (.*)$`)

// TestAllocEscapes runs the compiler's escape analysis on this package
// (go build -gcflags=-m) and fails on any heap escape inside the hot-path
// functions listed above. (await.go's "moved to heap: fe" is known and
// off the hot path: Await runs once per awaited flow, not per step.)
func TestAllocEscapes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the compiler")
	}
	goCmd := filepath.Join(build.Default.GOROOT, "bin", "go") // the toolchain that built this test
	out, err := exec.Command(goCmd, "build", "-gcflags=-m", "-o", "/dev/null", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	funcs := funcRanges(t)
	strict := map[string]bool{}
	for _, n := range hotStrict {
		strict[n] = true
	}
	noMove := map[string]bool{}
	for _, n := range hotNoMove {
		noMove[n] = true
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		m := escapeLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ln, _ := strconv.Atoi(m[2])
		fn := funcs.at(m[1], ln)
		seen[fn] = true
		msg := m[3]
		moved := strings.HasPrefix(msg, "moved to heap")
		escapes := strings.HasSuffix(msg, "escapes to heap")
		switch {
		case strict[fn] && moved, strict[fn] && escapes && coldEscapes[fn][msg] == "":
			t.Errorf("%s (%s:%s): %s", fn, m[1], m[2], msg)
		case noMove[fn] && moved:
			t.Errorf("%s (%s:%s): %s", fn, m[1], m[2], msg)
		}
	}
	// Every listed name must exist, or a rename would silently drop it.
	for _, n := range append(append([]string{}, hotStrict...), hotNoMove...) {
		if !funcs.has(n) {
			t.Errorf("hot function %s not found in the package", n)
		}
	}
}

type funcRange struct {
	name       string
	start, end int
}

type fileFuncs map[string][]funcRange

func (ff fileFuncs) at(file string, line int) string {
	for _, r := range ff[file] {
		if r.start <= line && line <= r.end {
			return r.name
		}
	}
	return ""
}

func (ff fileFuncs) has(name string) bool {
	for _, rs := range ff {
		for _, r := range rs {
			if r.name == name {
				return true
			}
		}
	}
	return false
}

// funcRanges maps each non-test file of the package to its functions'
// line ranges, named Func or Type.Method.
func funcRanges(t *testing.T) fileFuncs {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	ff := fileFuncs{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				typ := fd.Recv.List[0].Type
				if st, ok := typ.(*ast.StarExpr); ok {
					typ = st.X
				}
				if ix, ok := typ.(*ast.IndexExpr); ok {
					typ = ix.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					n = id.Name + "." + n
				}
			}
			ff[name] = append(ff[name], funcRange{n, fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line})
		}
	}
	return ff
}
