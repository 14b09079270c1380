package stepsd

import "bytes"

// Op is a request's command.
type Op uint8

// The commands of the line protocol.
const (
	OpSet   Op = iota + 1 // SET key value → OK
	OpGet                 // GET key → VALUE value | NOTFOUND
	OpDel                 // DEL key → OK | NOTFOUND
	OpEcho                // ECHO text → ECHO text
	OpSleep               // SLEEP ms → OK after ms milliseconds
)

// MaxSleep bounds SLEEP's argument: one hour, in milliseconds.
const MaxSleep = 3600_000

// Request is one parsed line. Key, Value and Text alias the line: they are
// valid only as long as the line's bytes are.
type Request struct {
	Op    Op
	Key   []byte // SET, GET, DEL
	Value []byte // SET: the rest of the line after the key, spaces included
	Text  []byte // ECHO: the rest of the line after "ECHO ", spaces included
	Ms    int64  // SLEEP
}

// Parse parses one request line, without its terminating "\n" (a trailing
// "\r" is ignored, so telnet and nc -C work). Command words are matched
// without regard to ASCII case only (Unicode folding would take "ſET" for
// SET). On a malformed line it returns a non-empty info
// for an "ERR InvalidRequest info" reply; info is a constant, so a bad
// request costs no allocation.
func Parse(line []byte) (req Request, info string) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 {
		return req, "empty request"
	}
	word, rest, hasRest := bytes.Cut(line, space)
	switch {
	case asciiFold(word, cmdSet):
		key, value, ok := bytes.Cut(rest, space)
		if !hasRest || !ok || !validKey(key) {
			return req, "usage: SET key value"
		}
		return Request{Op: OpSet, Key: key, Value: value}, ""
	case asciiFold(word, cmdGet), asciiFold(word, cmdDel):
		if !hasRest || !validKey(rest) {
			if word[0]|0x20 == 'g' {
				return req, "usage: GET key"
			}
			return req, "usage: DEL key"
		}
		op := OpGet
		if word[0]|0x20 == 'd' {
			op = OpDel
		}
		return Request{Op: op, Key: rest}, ""
	case asciiFold(word, cmdEcho):
		return Request{Op: OpEcho, Text: rest}, ""
	case asciiFold(word, cmdSleep):
		ms, ok := parseMs(rest)
		if !hasRest || !ok {
			return req, "usage: SLEEP ms (0 to 3600000)"
		}
		return Request{Op: OpSleep, Ms: ms}, ""
	}
	return req, "unknown command"
}

// asciiFold reports whether word is upper, an upper-case ASCII word, in
// either ASCII case.
func asciiFold(word, upper []byte) bool {
	if len(word) != len(upper) {
		return false
	}
	for i, c := range upper {
		if w := word[i]; w != c && w != c+('a'-'A') {
			return false
		}
	}
	return true
}

var (
	space    = []byte{' '}
	cmdSet   = []byte("SET")
	cmdGet   = []byte("GET")
	cmdDel   = []byte("DEL")
	cmdEcho  = []byte("ECHO")
	cmdSleep = []byte("SLEEP")
)

// validKey: one non-empty word.
func validKey(k []byte) bool {
	return len(k) > 0 && bytes.IndexByte(k, ' ') < 0
}

func parseMs(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 7 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= MaxSleep
}

// Replies, as written on the wire (each ends in "\n").
var (
	ReplyOK       = []byte("OK\n")
	ReplyNotFound = []byte("NOTFOUND\n")
	PrefixValue   = []byte("VALUE ")
	PrefixEcho    = []byte("ECHO")
	PrefixErr     = []byte("ERR ")
)

// AppendReply appends the success reply to req, given GET's value (found
// reports whether the key existed, for GET and DEL), to dst.
func AppendReply(dst []byte, req *Request, value []byte, found bool) []byte {
	switch req.Op {
	case OpGet:
		if !found {
			return append(dst, ReplyNotFound...)
		}
		dst = append(dst, PrefixValue...)
		dst = append(dst, value...)
		return append(dst, '\n')
	case OpDel:
		if !found {
			return append(dst, ReplyNotFound...)
		}
	case OpEcho:
		dst = append(dst, PrefixEcho...)
		if len(req.Text) > 0 {
			dst = append(dst, ' ')
			dst = append(dst, req.Text...)
		}
		return append(dst, '\n')
	}
	return append(dst, ReplyOK...)
}

// AppendError appends "ERR code info\n" to dst. Newlines in info become
// spaces, so one reply stays one line.
func AppendError(dst []byte, code, info string) []byte {
	dst = append(dst, PrefixErr...)
	dst = append(dst, code...)
	if info != "" {
		dst = append(dst, ' ')
		for i := 0; i < len(info); i++ {
			c := info[i]
			if c == '\n' || c == '\r' {
				c = ' '
			}
			dst = append(dst, c)
		}
	}
	return append(dst, '\n')
}
