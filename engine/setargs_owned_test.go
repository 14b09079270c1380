package engine

import (
	"testing"

	"github.com/asyncsteps/asyncsteps/reactor"
)

// TestExternalSuccessNotesOwned: an External's success on the loop marks
// the flow as holding owned values exactly when it brings one, whether or
// not the flow held any before (setArgs skips the drop scan for a flow
// that holds none, and must still note what arrives), so that the values
// are dropped when they leave the flow's arguments.
func TestExternalSuccessNotesOwned(t *testing.T) {
	owned := xBinaryValue(nil, 7, nil, 0, KindInt, true)
	plain := Int(7)
	for _, tc := range []struct {
		name        string
		before, val Value // before: what the parking step succeeded with
		want        bool
	}{
		{"plain into plain", Int(1), plain, false},
		{"owned into plain", Int(1), owned, true},
		{"plain into owned", owned, plain, false},
		{"owned into owned", owned, owned, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reactor.NewManual()
			root := New(r)
			var ext External
			got, ran := false, false
			root.Add(func(as *Steps) {
				if tc.before.meta&metaOwned != 0 {
					xTakeOwned(as)
				}
				as.Success(tc.before)
			})
			root.Add(func(as *Steps) { ext = as.External() })
			root.Add(func(as *Steps) {
				got, ran = xOwnsArgs(as) && as.fl.args.hasOwned(), true
				if v := as.Arg(0); v.word != 7 {
					t.Errorf("the step after the External got %+v, want the value 7", v)
				}
				as.fl.args.v[0].meta &^= metaOwned // no bridge here to drop it
				as.fl.owned = false
			})
			root.Execute()
			r.RunUntilIdle()
			if !ext.Success(tc.val) {
				t.Fatal("External.Success on the loop reported false")
			}
			r.RunUntilIdle()
			if !ran || got != tc.want {
				t.Fatalf("ran %v; the flow holds an owned value: %v, want %v", ran, got, tc.want)
			}
			root.Release()
		})
	}
}
