package stepsd

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// resp encodes words as a RESP array, as a client sends them.
func resp(words ...string) string {
	var b []byte
	b = appendArrayHeader(b, len(words))
	for _, w := range words {
		b = appendBulk(b, []byte(w))
	}
	return string(b)
}

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		op    Op
		args  []string // every word, when the request is complete
		bad   string
		fatal string
		n     int // bytes taken; -1: all of in
	}{
		{in: resp("SET", "k", "two words"), op: OpSet, args: []string{"SET", "k", "two words"}, n: -1},
		{in: resp("set", "k", ""), op: OpSet, args: []string{"set", "k", ""}, n: -1},
		{in: resp("GET", "k") + "rest", op: OpGet, args: []string{"GET", "k"}, n: len(resp("GET", "k"))},
		{in: resp("DEL", "a", "b", "c"), op: OpDel, args: []string{"DEL", "a", "b", "c"}, n: -1},
		{in: resp("PING"), op: OpPing, args: []string{"PING"}, n: -1},
		{in: resp("PING", "hi"), op: OpEcho, args: []string{"PING", "hi"}, n: -1},
		{in: resp("ECHO", "a\r\nb"), op: OpEcho, args: []string{"ECHO", "a\r\nb"}, n: -1},
		{in: resp("SLEEP", "3600000"), op: OpSleep, args: []string{"SLEEP", "3600000"}, n: -1},
		{in: resp("QUIT"), op: OpQuit, args: []string{"QUIT"}, n: -1},
		// Inline commands.
		{in: "SET k v\r\n", op: OpSet, args: []string{"SET", "k", "v"}, n: -1},
		{in: "get k\n", op: OpGet, args: []string{"get", "k"}, n: -1},
		{in: "  ECHO \t hi  \n", op: OpEcho, args: []string{"ECHO", "hi"}, n: -1},
		{in: "SET k \"a b\\n\\x41\"\n", op: OpSet, args: []string{"SET", "k", "a b\nA"}, n: -1},
		{in: "SET 'k\\'s' ''\n", op: OpSet, args: []string{"SET", "k's", ""}, n: -1},
		{in: "\r\n", op: OpNone, n: -1},
		{in: "*0\r\n", op: OpNone, n: -1},
		{in: "*-1\r\n", op: OpNone, n: -1},
		// Refused with the framing intact.
		{in: resp("GET"), op: OpGet, args: []string{"GET"}, bad: badArity, n: -1},
		{in: resp("GET", "a", "b"), op: OpGet, args: []string{"GET", "a", "b"}, bad: badArity, n: -1},
		{in: resp("SET", "k", "v", "EX", "1"), op: OpSet, args: []string{"SET", "k", "v", "EX", "1"}, bad: badSyntax, n: -1},
		{in: resp("SLEEP", "-1"), op: OpSleep, args: []string{"SLEEP", "-1"}, bad: badSleep, n: -1},
		{in: resp("SLEEP", "3600001"), op: OpSleep, args: []string{"SLEEP", "3600001"}, bad: badSleep, n: -1},
		{in: "FLY away\n", op: OpConst, args: []string{"FLY", "away"}, bad: badUnknown, n: -1},
		{in: "\u017fET k v\n", op: OpConst, args: []string{"\u017fET", "k", "v"}, bad: badUnknown, n: -1}, // ſET: folds to SET in Unicode only
		{in: resp("SELECT", "1"), op: OpConst, args: []string{"SELECT", "1"}, bad: badDB, n: -1},
		{in: resp("AUTH", "pw"), op: OpConst, args: []string{"AUTH", "pw"}, bad: badAuth, n: -1},
		// Incomplete: nothing taken.
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk", n: 0},
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r", n: 0},
		{in: "*2\r", n: 0},
		{in: "GET k", n: 0},
		// Protocol errors.
		{in: "*2\r\n+GET\r\n", fatal: errDollar},
		{in: "*x\r\n", fatal: errMultiLen},
		{in: "*2\n", fatal: errMultiLen},
		{in: "*1025\r\n", fatal: errMultiLen},
		{in: "*1\r\n$-1\r\n", fatal: errBulkLen},
		{in: "*1\r\n$524289\r\n", fatal: errBulkLen},
		{in: "*1\r\n$3\r\nGETxx", fatal: errBulkEnd},
		{in: "SET k \"v\n", fatal: errQuotes},
		{in: "SET k \"v\"x\n", fatal: errQuotes},
		{in: strings.Repeat("x", 64<<10), fatal: errTooBigInline},
		{in: "*1\r\n$" + strings.Repeat("1", 64<<10), fatal: errTooBigBulkH},
		{in: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$524288\r\n" + strings.Repeat("v", 512<<10) + "\r\n" +
			resp("ECHO", strings.Repeat("w", 512<<10)), op: OpSet, n: 4 + 9 + 7 + 9 + 512<<10 + 2, args: []string{"SET", "k", strings.Repeat("v", 512<<10)}},
		{in: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$524288\r\n" + strings.Repeat("v", 512<<10) + "\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$524288\r\n" + strings.Repeat("v", 512<<10),
			op: OpSet, n: 4 + 9 + 7 + 9 + 512<<10 + 2, args: []string{"SET", "k", strings.Repeat("v", 512<<10)}},
		{in: "*2\r\n$524288\r\n" + strings.Repeat("v", 512<<10) + "\r\n$524288\r\n", fatal: errTooBig},
	}
	var p Parser
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		req, n, fatal := p.Parse([]byte(tt.in))
		want := tt.n
		if want < 0 {
			want = len(tt.in)
		}
		if tt.fatal != "" {
			want = 0
		}
		if fatal != tt.fatal || n != want {
			t.Errorf("Parse(%q) = n %d, fatal %q; want %d, %q", name, n, fatal, want, tt.fatal)
			continue
		}
		if n == 0 {
			continue
		}
		var args []string
		for _, a := range req.Args {
			args = append(args, string(a))
		}
		if req.Op != tt.op || req.Bad != tt.bad || strings.Join(args, "|") != strings.Join(tt.args, "|") {
			t.Errorf("Parse(%q) = op %d bad %q args %q; want op %d bad %q args %q", name, req.Op, req.Bad, args, tt.op, tt.bad, tt.args)
		}
	}
}

func TestParseSetsFields(t *testing.T) {
	var p Parser
	req, _, _ := p.Parse([]byte(resp("SET", "key", "value")))
	if string(req.Key) != "key" || string(req.Value) != "value" {
		t.Errorf("SET: key %q value %q", req.Key, req.Value)
	}
	req, _, _ = p.Parse([]byte("SLEEP 25\n"))
	if req.Ms != 25 {
		t.Errorf("SLEEP 25: Ms %d", req.Ms)
	}
	req, _, _ = p.Parse([]byte(resp("ECHO", "x y")))
	if string(req.Text) != "x y" {
		t.Errorf("ECHO: text %q", req.Text)
	}
}

// The commands redis-cli, redis-benchmark, go-redis and twemproxy send on
// their own get the answers Redis gives them.
func TestConnectionCommands(t *testing.T) {
	tests := []struct{ in, want string }{
		{resp("COMMAND", "DOCS"), string(replyCommandDocs)},
		{resp("COMMAND", "DOCS", "nosuch"), "*0\r\n"},
		{resp("COMMAND", "DOCS", "quit", "nosuch"), "*2\r\n$4\r\nquit\r\n*6\r\n$7\r\nsummary\r\n$20\r\nClose the connection\r\n" +
			"$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n"},
		{resp("COMMAND"), "*0\r\n"},
		{resp("CONFIG", "GET", "save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"},
		{resp("CONFIG", "GET", "appendonly"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{resp("CONFIG", "GET", "SAVE", "appendonly", "maxmemory"), "*4\r\n$4\r\nsave\r\n$0\r\n\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"},
		{resp("CONFIG", "GET", "maxmemory"), "*0\r\n"},
		{resp("CONFIG", "SET", "save", ""), "-ERR unknown subcommand for 'CONFIG'\r\n"},
		{resp("HELLO", "3"), "-NOPROTO unsupported protocol version\r\n"},
		{"HELLO\r\n", string(replyHello)}, // found by FuzzParse: HELLO alone read past its words
		{resp("HELLO", "x"), "-ERR Protocol version is not an integer or out of range\r\n"},
		{resp("CLIENT", "SETNAME", "me"), "+OK\r\n"},
		{resp("CLIENT", "SETINFO", "LIB-NAME", "go-redis"), "+OK\r\n"},
		{resp("CLIENT", "GETNAME"), "$-1\r\n"},
		{resp("CLIENT", "KILL"), "-ERR unknown subcommand for 'CLIENT'\r\n"},
		{resp("SELECT", "0"), "+OK\r\n"},
		{resp("FLY"), "-ERR unknown command 'FLY'\r\n"},
		{resp("GET"), "-ERR wrong number of arguments for 'GET' command\r\n"},
		{resp("PING"), "+PONG\r\n"},
		{resp("PING", "x"), "$1\r\nx\r\n"},
	}
	var p Parser
	for _, tt := range tests {
		req, n, fatal := p.Parse([]byte(tt.in))
		if n != len(tt.in) || fatal != "" {
			t.Errorf("%q: n %d fatal %q", tt.in, n, fatal)
			continue
		}
		var got []byte
		if req.Bad != "" {
			got = AppendBad(nil, req.Bad, req.Name())
		} else {
			got = AppendReply(nil, &req, nil, 0)
		}
		if string(got) != tt.want {
			t.Errorf("%q: reply %q, want %q", tt.in, got, tt.want)
		}
	}
	// COMMAND DOCS, all of them, names each command stepsd has, in lower
	// case as Redis does, each once; redis-cli builds its help from it.
	names := []string{"get", "set", "del", "ping", "echo", "sleep", "quit"}
	for _, d := range dataCmds {
		names = append(names, strings.ToLower(string(d.name)))
	}
	for _, name := range names {
		if k := bytes.Count(replyCommandDocs, []byte("\r\n$"+strconv.Itoa(len(name))+"\r\n"+name+"\r\n*")); k != 1 {
			t.Errorf("COMMAND DOCS names %s %d times", name, k)
		}
	}
	if want := fmt.Sprintf("*%d\r\n", 2*len(names)); !bytes.HasPrefix(replyCommandDocs, []byte(want)) {
		t.Errorf("COMMAND DOCS: %.20q, want %d commands, each a name and a doc", replyCommandDocs, len(names))
	}
	if want := fmt.Sprintf(":%d\r\n", len(names)); string(replyCommandCount) != want {
		t.Errorf("COMMAND COUNT: %q, want %q", replyCommandCount, want)
	}
	req, _, _ := new(Parser).Parse([]byte(resp("HELLO", "2")))
	if !bytes.Contains(req.Text, []byte("proto\r\n:2\r\n")) || req.Text[0] != '*' {
		t.Errorf("HELLO 2: %q", req.Text)
	}
}

func TestAppendReplyAndError(t *testing.T) {
	tests := []struct {
		req   Request
		value string
		n     int
		want  string
	}{
		{Request{Op: OpSet}, "", 0, "+OK\r\n"},
		{Request{Op: OpGet}, "v\r\nw", 1, "$4\r\nv\r\nw\r\n"},
		{Request{Op: OpGet}, "", 1, "$0\r\n\r\n"},
		{Request{Op: OpGet}, "", 0, "$-1\r\n"},
		{Request{Op: OpDel}, "", 3, ":3\r\n"},
		{Request{Op: OpDel}, "", 0, ":0\r\n"},
		{Request{Op: OpEcho, Text: []byte("hi")}, "", 0, "$2\r\nhi\r\n"},
		// The one-digit header is stored, not formatted: both sides of it.
		{Request{Op: OpGet}, "123456789", 1, "$9\r\n123456789\r\n"},
		{Request{Op: OpGet}, "1234567890", 1, "$10\r\n1234567890\r\n"},
		{Request{Op: OpEcho, Text: []byte("123456789")}, "", 0, "$9\r\n123456789\r\n"},
		{Request{Op: OpEcho, Text: []byte("1234567890")}, "", 0, "$10\r\n1234567890\r\n"},
		{Request{Op: OpPing}, "", 0, "+PONG\r\n"},
		{Request{Op: OpSleep}, "", 0, "+OK\r\n"},
		{Request{Op: OpQuit}, "", 0, "+OK\r\n"},
	}
	for _, tt := range tests {
		if got := string(AppendReply(nil, &tt.req, []byte(tt.value), tt.n)); got != tt.want {
			t.Errorf("AppendReply(%+v) = %q, want %q", tt.req, got, tt.want)
		}
	}
	if got := string(AppendError(nil, "Timeout", "a\nb")); got != "-Timeout a b\r\n" {
		t.Errorf("AppendError = %q", got)
	}
	if got := string(AppendError(nil, "DefenseRejected", "")); got != "-DefenseRejected\r\n" {
		t.Errorf("AppendError without info = %q", got)
	}
	if got := string(AppendBad(nil, badUnknown, []byte("a\r\nb"))); got != "-ERR unknown command 'a  b'\r\n" {
		t.Errorf("AppendBad = %q", got)
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	ins := [][]byte{
		[]byte(resp("SET", "key", "value")), []byte(resp("GET", "key")), []byte("bogus\r\n"),
		[]byte("SLEEP 10\n"), []byte("SET k \"quoted value\"\n"), []byte(resp("CONFIG", "GET", "save")),
		[]byte(resp("DEL", "a", "b")),
	}
	var p Parser
	var dst []byte
	run := func() {
		for _, in := range ins {
			r, _, _ := p.Parse(in)
			if r.Bad != "" {
				dst = AppendBad(dst[:0], r.Bad, r.Name())
			} else {
				dst = AppendReply(dst[:0], &r, r.Value, 1)
			}
		}
	}
	run() // warm: the parser's lists grow once
	if allocs := testing.AllocsPerRun(100, run); allocs != 0 {
		t.Errorf("Parse+Append: %v allocs per run, want 0", allocs)
	}
}

// FuzzParse checks the server's only parser of untrusted input: it never
// panics nor changes its input; a request it takes is self-delimited (the
// same bytes alone give the same request, one byte less is incomplete);
// its words, sent again as an array, parse to the same words and command;
// a refusal or protocol error is one of the constant messages.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		resp("SET", "k", "v"), resp("GET", "k"), resp("DEL", "a", "b"), resp("PING"), resp("ECHO", "x"),
		resp("SLEEP", "0"), resp("CONFIG", "GET", "save"), resp("HELLO", "3"), "SET k v\r\n", "GET k\n",
		"SET k \"a\\x41\\n\" 'b'\n", "*2\r\n$3\r\nGET\r\n$1\r\nk", "*-1\r\n", "*1\r\n$-1\r\n", "\r\n",
		"\u017fET k v\n", "ECHO \xff\xfe\n", "SLEEP 00000000000000000001\n", "*1\r\n$3\r\nGETxx",
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxLine: 256, MaxBulk: 128, MaxArgs: 8, MaxRequest: 1024}
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := string(in)
		p := Parser{Limits: lim}
		req, n, fatal := p.Parse(in)
		if string(in) != orig {
			t.Fatal("Parse modified its input")
		}
		if fatal != "" {
			if n != 0 || !strings.HasPrefix(fatal, "Protocol error: ") {
				t.Fatalf("%q: n %d with fatal %q", orig, n, fatal)
			}
			return
		}
		if n < 0 || n > len(in) {
			t.Fatalf("%q: n %d", orig, n)
		}
		if n == 0 {
			return
		}
		words := make([]string, len(req.Args))
		for i, a := range req.Args {
			words[i] = string(a)
		}
		op, bad := req.Op, req.Bad
		if bad != "" && !strings.Contains(bad, " ") {
			t.Fatalf("%q: bad %q", orig, bad)
		}
		if (op == OpNone) != (len(words) == 0) {
			t.Fatalf("%q: op %d with %d words", orig, op, len(words))
		}
		// Self-delimited.
		q := Parser{Limits: lim}
		req2, n2, fatal2 := q.Parse(in[:n:n])
		if n2 != n || fatal2 != "" || req2.Op != op {
			t.Fatalf("%q: alone %d, %q, op %d; want %d, op %d", orig[:n], n2, fatal2, req2.Op, n, op)
		}
		if _, n3, fatal3 := q.Parse(in[: n-1 : n-1]); n3 != 0 || fatal3 != "" {
			t.Fatalf("%q: one byte short gave %d, %q", orig[:n-1], n3, fatal3)
		}
		if len(words) == 0 {
			return
		}
		// The same words as an array.
		enc := resp(words...)
		req4, n4, fatal4 := (&Parser{Limits: Limits{MaxLine: 256, MaxBulk: 1024, MaxArgs: 1024, MaxRequest: 1 << 20}}).Parse([]byte(enc))
		if n4 != len(enc) || fatal4 != "" || req4.Op != op || req4.Bad != bad || len(req4.Args) != len(words) {
			t.Fatalf("%q as %q: %d %q op %d bad %q", orig, enc, n4, fatal4, req4.Op, req4.Bad)
		}
		for i, a := range req4.Args {
			if string(a) != words[i] {
				t.Fatalf("%q as %q: word %d %q, want %q", orig, enc, i, a, words[i])
			}
		}
	})
}

// BenchmarkParse parses the load generator's mix: SET, GET and ECHO as
// arrays, and one inline command, per op.
func BenchmarkParse(b *testing.B) {
	in := []byte(resp("SET", "k123", "v123") + resp("GET", "k123") + resp("ECHO", "hello") + "GET k123\r\n")
	var p Parser
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		for off := 0; off < len(in); {
			_, n, _ := p.Parse(in[off:])
			off += n
		}
	}
}

// ParseZeroed into a zero Request gives what ParseInto gives, for framed,
// inline, empty, partial and malformed input, and writes the Request only
// when it parsed one: a partial or malformed request, or an empty one,
// leaves it zero (the slot a read loop clears once a batch).
func TestParseZeroedIsParseInto(t *testing.T) {
	inputs := []string{
		resp("SET", "k", "two words"), resp("GET", "k") + "rest", resp("DEL", "a", "b"),
		resp("PING"), resp("PING", "x"), resp("ECHO", "e"), resp("SLEEP", "25"), resp("SLEEP", "x"),
		resp("GET"), resp("SET", "k", "v", "EX", "1"), resp("BOGUS", "x"), resp("QUIT"),
		"PING\r\n", "SET a b\r\n", "ECHO \"x y\"\r\n", "\r\n", "*0\r\n", "*-1\r\n",
		"*2\r\n$3\r\nGET\r\n", "*1\r\n$4\r\nPI", "*x\r\n", "*1\r\n$-5\r\n", "*1\r\n$1\r\nab\r\n", "",
	}
	for _, in := range inputs {
		var pa, pz Parser
		var a, z Request
		a.Bad = "stale" // ParseInto clears it
		na, fa := pa.ParseInto(&a, []byte(in))
		nz, fz := pz.ParseZeroed(&z, []byte(in))
		if na != nz || fa != fz {
			t.Errorf("%q: ParseZeroed n %d fatal %q, ParseInto n %d fatal %q", in, nz, fz, na, fa)
			continue
		}
		if fmt.Sprintf("%+q", z) != fmt.Sprintf("%+q", a) {
			t.Errorf("%q: ParseZeroed %+q, ParseInto %+q", in, z, a)
		}
		if (nz == 0 || fz != "") && !reflect.DeepEqual(z, Request{}) {
			t.Errorf("%q: nothing parsed, but the Request was written: %+q", in, z)
		}
	}
}
