package syncprim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// Queue lengths are explained once, in the package doc's "Queue lengths"
// section: 0 means different things in the spec's Mutex and
// Throttle (null: unlimited) and in its Limiter (default: no queue), and
// NoQueue says the spec's max_queue=0 everywhere. Every queue-taking name
// points there, and no copy of the explanation is pasted anywhere else
// (there were once five copies).
const (
	queueRef     = `see the package doc, "Queue lengths"`
	queueSection = "# Queue lengths"
	pastedLine   = "for NewMutex and NewThrottle 0 means unlimited (the spec's null); for LimiterOptions.MaxQueue and Burst 0 means no queue"
)

func TestQueueLimitDocsPointToThePackageDoc(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var pkgDoc string
	for _, f := range pkgs["syncprim"].Files {
		if f.Doc != nil {
			pkgDoc += f.Doc.Text()
		}
		for _, cg := range f.Comments {
			if strings.Contains(strings.Join(strings.Fields(cg.Text()), " "), pastedLine) {
				t.Errorf("%s: a pasted copy of the queue-length explanation:\n%s", fset.Position(cg.Pos()), cg.Text())
			}
		}
	}
	for _, want := range []string{queueSection, "NoQueue", "Unlimited", "unlimited (the spec's null)", "no queue (the spec's"} {
		if !strings.Contains(pkgDoc, want) {
			t.Errorf("the package doc lacks %q", want)
		}
	}
	docs := map[string]string{}
	for _, f := range pkgs["syncprim"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Doc != nil {
					docs[d.Name.Name] = d.Doc.Text()
				}
			case *ast.GenDecl:
				if d.Doc == nil {
					continue
				}
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						docs[sp.Name.Name] = d.Doc.Text()
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							docs[n.Name] = d.Doc.Text()
						}
					}
				}
			}
		}
	}
	for _, name := range []string{"NewMutex", "NewThrottle", "NewLimiter", "LimiterOptions", "Unlimited", "NoQueue"} {
		if !strings.Contains(strings.ToLower(strings.Join(strings.Fields(docs[name]), " ")), strings.ToLower(queueRef)) {
			t.Errorf("%s's doc does not point to the package doc's queue lengths:\n%s", name, docs[name])
		}
	}
}

// Each meaning of 0 and Unlimited, as the line says.
func TestQueueLimitMeanings(t *testing.T) {
	tests := []struct {
		name     string
		make     func(r *reactor.Reactor) engine.Sync
		queued   int    // of 3 flows after the first holds: how many may wait
		rejected string // their ErrorInfo when rejected
	}{
		{"NewMutex 0: unlimited", func(r *reactor.Reactor) engine.Sync { return NewMutex(1, 0) }, 3, ""},
		{"NewMutex Unlimited", func(r *reactor.Reactor) engine.Sync { return NewMutex(1, Unlimited) }, 3, ""},
		{"NewMutex 1", func(r *reactor.Reactor) engine.Sync { return NewMutex(1, 1) }, 1, "mutex queue is full"},
		{"Limiter MaxQueue 0: no queue", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Rate: 100})
		}, 0, "limiter: concurrency queue is full"},
		{"Limiter MaxQueue Unlimited", func(r *reactor.Reactor) engine.Sync {
			return NewLimiter(r, LimiterOptions{Rate: 100, MaxQueue: Unlimited})
		}, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reactor.NewManual()
			obj := tt.make(r)
			g := newGate()
			_, first := start(r, obj, g.section("first"))
			var infos []string
			var ps []*engine.Promise
			for i := 0; i < 3; i++ {
				root, p := start(r, obj, func(as *engine.Steps) {}, func(as *engine.Steps, code string) {
					infos = append(infos, code+": "+as.State().ErrorInfo)
				})
				_ = root
				ps = append(ps, p)
			}
			r.RunUntilIdle()
			if len(infos) != 3-tt.queued {
				t.Fatalf("rejections %q, want %d", infos, 3-tt.queued)
			}
			for _, inf := range infos {
				if inf != engine.DefenseRejected+": "+tt.rejected {
					t.Fatalf("rejection %q, want info %q", inf, tt.rejected)
				}
			}
			g.open(t, "first")
			r.RunUntilIdle()
			r.Advance(2 * time.Second)
			<-first.Done()
			for _, p := range ps {
				<-p.Done()
			}
		})
	}
}
