package leakcheck

import (
	"os"
	"testing"
)

func TestFDsCountsAnOpenFile(t *testing.T) {
	before := FDs(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if got := FDs(t); got != before+1 {
		t.Errorf("FDs = %d with one more file open, want %d", got, before+1)
	}
	_ = f.Close()
	Until(t, "the file's descriptor closed", func() bool { return FDs(t) == before })
}
