package stepsd

import (
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line string
		want Request
		bad  string
	}{
		{line: "SET k v", want: Request{Op: OpSet, Key: []byte("k"), Value: []byte("v")}},
		{line: "set k two words\r", want: Request{Op: OpSet, Key: []byte("k"), Value: []byte("two words")}},
		{line: "SET k ", want: Request{Op: OpSet, Key: []byte("k"), Value: []byte{}}},
		{line: "GET k", want: Request{Op: OpGet, Key: []byte("k")}},
		{line: "Del k", want: Request{Op: OpDel, Key: []byte("k")}},
		{line: "ECHO a  b", want: Request{Op: OpEcho, Text: []byte("a  b")}},
		{line: "ECHO", want: Request{Op: OpEcho}},
		{line: "SLEEP 0", want: Request{Op: OpSleep}},
		{line: "SLEEP 3600000", want: Request{Op: OpSleep, Ms: MaxSleep}},
		{line: "", bad: "empty request"},
		{line: "\r", bad: "empty request"},
		{line: "SET k", bad: "usage: SET key value"},
		{line: "SET", bad: "usage: SET key value"},
		{line: "SET  v", bad: "usage: SET key value"},
		{line: "GET", bad: "usage: GET key"},
		{line: "GET a b", bad: "usage: GET key"},
		{line: "DEL ", bad: "usage: DEL key"},
		{line: "SLEEP", bad: "usage: SLEEP ms (0 to 3600000)"},
		{line: "SLEEP -1", bad: "usage: SLEEP ms (0 to 3600000)"},
		{line: "SLEEP 3600001", bad: "usage: SLEEP ms (0 to 3600000)"},
		{line: "SLEEP 99999999999", bad: "usage: SLEEP ms (0 to 3600000)"},
		{line: "SLEEP 1x", bad: "usage: SLEEP ms (0 to 3600000)"},
		{line: "PING", bad: "unknown command"},
		{line: " GET k", bad: "unknown command"},
	}
	for _, tt := range tests {
		got, bad := Parse([]byte(tt.line))
		if bad != tt.bad {
			t.Errorf("Parse(%q) info = %q, want %q", tt.line, bad, tt.bad)
			continue
		}
		if bad != "" {
			continue
		}
		if got.Op != tt.want.Op || string(got.Key) != string(tt.want.Key) || string(got.Value) != string(tt.want.Value) ||
			string(got.Text) != string(tt.want.Text) || got.Ms != tt.want.Ms {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestAppendReplyAndError(t *testing.T) {
	tests := []struct {
		req   Request
		value string
		found bool
		want  string
	}{
		{Request{Op: OpSet}, "", false, "OK\n"},
		{Request{Op: OpGet}, "v w", true, "VALUE v w\n"},
		{Request{Op: OpGet}, "", false, "NOTFOUND\n"},
		{Request{Op: OpDel}, "", true, "OK\n"},
		{Request{Op: OpDel}, "", false, "NOTFOUND\n"},
		{Request{Op: OpEcho, Text: []byte("hi")}, "", false, "ECHO hi\n"},
		{Request{Op: OpEcho}, "", false, "ECHO\n"},
		{Request{Op: OpSleep}, "", false, "OK\n"},
	}
	for _, tt := range tests {
		if got := string(AppendReply(nil, &tt.req, []byte(tt.value), tt.found)); got != tt.want {
			t.Errorf("AppendReply(%+v) = %q, want %q", tt.req, got, tt.want)
		}
	}
	if got := string(AppendError(nil, "Timeout", "a\nb")); got != "ERR Timeout a b\n" {
		t.Errorf("AppendError = %q", got)
	}
	if got := string(AppendError(nil, "Timeout", "")); got != "ERR Timeout\n" {
		t.Errorf("AppendError without info = %q", got)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	lines := [][]byte{[]byte("SET key value"), []byte("GET key"), []byte("bogus"), []byte("SLEEP 10")}
	var dst []byte
	allocs := testing.AllocsPerRun(100, func() {
		for _, l := range lines {
			r, bad := Parse(l)
			if bad != "" {
				dst = AppendError(dst[:0], "InvalidRequest", bad)
			} else {
				dst = AppendReply(dst[:0], &r, r.Value, true)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Parse+Append: %v allocs per run, want 0", allocs)
	}
}
