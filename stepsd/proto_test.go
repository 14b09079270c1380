package stepsd

import (
	"strconv"
	"strings"
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
		// Command words fold ASCII case only (issue 12 item 6).
		{line: "eChO hi", want: Request{Op: OpEcho, Text: []byte("hi")}},
		{line: "sLeEp 5", want: Request{Op: OpSleep, Ms: 5}},
		{line: "\u017fET k v", bad: "unknown command"},   // ſET: ſ folds to s in Unicode
		{line: "\u017fLEEP 1", bad: "unknown command"},   // ſLEEP
		{line: "\u017fet k v", bad: "unknown command"},   // ſet
		{line: "G\u0395T k", bad: "unknown command"},     // Greek capital epsilon
		{line: "DE\u212a k", bad: "unknown command"},     // Kelvin sign (folds to k; not a command letter, but never ASCII)
		{line: "S\xc5\xbfT k v", bad: "unknown command"}, // raw bytes of ſ in the middle
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

// FuzzParse checks the server's only parser of untrusted input: it never
// panics, a bad line gets a constant usage or unknown-command message, and
// an accepted line is exactly what the protocol says (the command word in
// ASCII case, key and value aliasing the line's parts).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SET k v", "set k two words\r", "GET k", "Del k", "ECHO a  b", "ECHO", "SLEEP 0",
		"SLEEP 3600000", "SLEEP 3600001", "SLEEP -1", "", "\r", "SET  v", "GET a b",
		"\u017fET k v", "S\xc5\xbfT k v", "ECHO \xff\xfe", "SLEEP 00000000000000000001", "GET \x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := string(line)
		req, info := Parse(line)
		if string(line) != orig {
			t.Fatal("Parse modified its input")
		}
		trimmed := strings.TrimSuffix(orig, "\r")
		word, rest, hasRest := strings.Cut(trimmed, " ")
		if info != "" {
			if req.Op != 0 {
				t.Fatalf("%q: info %q with Op %d", orig, info, req.Op)
			}
			if !strings.HasPrefix(info, "usage: ") && info != "unknown command" && info != "empty request" {
				t.Fatalf("%q: unexpected info %q", orig, info)
			}
			return
		}
		name := map[Op]string{OpSet: "SET", OpGet: "GET", OpDel: "DEL", OpEcho: "ECHO", OpSleep: "SLEEP"}[req.Op]
		if name == "" || strings.ToUpper(word) != name || strings.ContainsFunc(word, func(r rune) bool { return r >= 0x80 }) {
			t.Fatalf("%q accepted as Op %d (%s)", orig, req.Op, name)
		}
		switch req.Op {
		case OpSet:
			if !hasRest || rest != string(req.Key)+" "+string(req.Value) || len(req.Key) == 0 {
				t.Fatalf("%q: SET key %q value %q", orig, req.Key, req.Value)
			}
		case OpGet, OpDel:
			if rest != string(req.Key) || len(req.Key) == 0 || strings.ContainsAny(rest, " ") {
				t.Fatalf("%q: key %q", orig, req.Key)
			}
		case OpEcho:
			if string(req.Text) != rest {
				t.Fatalf("%q: text %q", orig, req.Text)
			}
		case OpSleep:
			if req.Ms < 0 || req.Ms > MaxSleep || strconv.FormatInt(req.Ms, 10) != strings.TrimLeft(rest, "0") && !(req.Ms == 0 && strings.Trim(rest, "0") == "") {
				t.Fatalf("%q: ms %d", orig, req.Ms)
			}
		}
	})
}
