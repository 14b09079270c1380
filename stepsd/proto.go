package stepsd

import (
	"bytes"
	"encoding/binary"
)

// This file is the protocol: RESP2, Redis's serialization protocol, as a
// Redis server speaks it. Parser frames and parses requests, AppendReply
// and AppendError format replies; the benchmark's peer servers use them
// too, so every server puts the same bytes on the wire.

// Op is a request's command.
type Op uint8

// The commands. OpNone is a frame with nothing to answer (an empty inline
// line or an empty array), which Redis skips silently.
const (
	OpNone  Op = iota
	OpSet      // SET key value → +OK
	OpGet      // GET key → $value | $-1 (nil)
	OpDel      // DEL key [key ...] → :keys deleted
	OpEcho     // ECHO text, PING text → $text
	OpSleep    // SLEEP ms → +OK after ms milliseconds (ours)
	OpPing     // PING → +PONG
	OpConst    // a connection or introspection command (COMMAND, CONFIG GET, HELLO, CLIENT, SELECT, INFO...): Request.Text is its reply, encoded
	OpQuit     // QUIT → +OK, then the connection closes
	opCount
)

// MaxSleep bounds SLEEP's argument: one hour, in milliseconds.
const MaxSleep = 3600_000

// Limits bound what a Parser accepts, as Redis's proto-max-bulk-len and
// its inline and multibulk limits do. Beyond them the framing is lost:
// Parse reports a protocol error, and a server answers it and closes the
// connection.
type Limits struct {
	MaxLine    int // an inline command's line, or an array or bulk header line, "\r\n" included
	MaxBulk    int // a bulk string's length (proto-max-bulk-len)
	MaxArgs    int // an array's elements, or an inline command's words
	MaxRequest int // a whole request's bytes, headers included
}

// DefaultLimits: 64 KiB lines (Redis's PROTO_INLINE_MAX_SIZE), 512 KiB
// bulks, 1024 arguments, 1 MiB requests.
func DefaultLimits() Limits {
	return Limits{MaxLine: 64 << 10, MaxBulk: 512 << 10, MaxArgs: 1024, MaxRequest: 1 << 20}
}

// Request is one parsed request. Its slices alias the parsed bytes or the
// Parser's scratch: they are valid until the next Parse, or until the
// bytes change.
type Request struct {
	Op    Op
	Key   []byte   // SET, GET; DEL's first key
	Value []byte   // SET
	Text  []byte   // ECHO, PING text; OpConst: the reply; a value type's command (Op.Typed): its words after the key, each after its uvarint length, in the Parser's scratch
	Ms    int64    // SLEEP
	Args  [][]byte // every word, the command's first
	// Bad, when not empty, is why the request is refused with a "-ERR"
	// reply while the framing is intact (unknown command, wrong number
	// of arguments...); Op is then the command's if known. It is a
	// constant: a "%s" in it stands for the command's name (AppendBad).
	Bad string
}

// Name is the command's name as sent ("" for OpNone).
func (r *Request) Name() []byte {
	if len(r.Args) == 0 {
		return nil
	}
	return r.Args[0]
}

// Parser parses requests, allocation-free once warm (its argument list
// and scratch grow to the largest request seen, within Limits). Its zero
// value uses DefaultLimits.
type Parser struct {
	Limits Limits
	// StringsOnly refuses the value types' commands (Op.Typed: INCR,
	// MSET, the lists', sets', hashes', sorted sets' and streams'
	// commands, TYPE) as unknown ("-ERR unknown command"), as a server
	// that keeps strings only answers them: the benchmark's peers.
	StringsOnly bool
	args        [][]byte
	scratch     []byte // inline words in quotes
	reply       []byte // composed replies (CONFIG GET)
	words       []byte // a value type command's words after its key, encoded (Request.Text)
}

// The protocol errors: the framing is lost, the connection must close
// after the reply. As Redis words them.
const (
	errTooBigInline = "Protocol error: too big inline request"
	errTooBigCount  = "Protocol error: too big mbulk count string"
	errTooBigBulkH  = "Protocol error: too big bulk count string"
	errMultiLen     = "Protocol error: invalid multibulk length"
	errBulkLen      = "Protocol error: invalid bulk length"
	errDollar       = "Protocol error: expected '$'"
	errBulkEnd      = "Protocol error: bulk string not followed by CRLF"
	errQuotes       = "Protocol error: unbalanced quotes in request"
	errTooManyWords = "Protocol error: too many arguments in inline request"
	errTooBig       = "Protocol error: request over the server's size limit"
)

// Refusals with the framing intact: "-ERR ..." and the connection goes on.
const (
	badUnknown  = "unknown command '%s'"
	badArity    = "wrong number of arguments for '%s' command"
	badSyntax   = "syntax error"
	badSleep    = "SLEEP takes milliseconds, 0 to 3600000"
	badSubcmd   = "unknown subcommand for '%s'"
	badDB       = "DB index is out of range"
	badAuth     = "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	badProtoVer = "Protocol version is not an integer or out of range"
)

// NoProto is the reply to HELLO 3, as Redis gives it when it refuses a
// protocol version: clients (go-redis) then go on in RESP2.
var NoProto = []byte("-NOPROTO unsupported protocol version\r\n")

// Parse parses the first request in buf. It returns the bytes the request
// took, 0 if buf holds only part of one (read more, then call again with
// the same bytes and more). A non-empty fatal is a protocol error: the
// framing is lost; answer AppendError(dst, "ERR", fatal) and close.
func (p *Parser) Parse(buf []byte) (req Request, n int, fatal string) {
	n, fatal = p.ParseInto(&req, buf)
	return req, n, fatal
}

// ParseInto is Parse into *req, which it clears first. A read loop that
// parses many requests into one Request saves the copy of a returned one
// (about 34 instructions a request on a pipelined read).
func (p *Parser) ParseInto(req *Request, buf []byte) (n int, fatal string) {
	*req = Request{}
	return p.ParseZeroed(req, buf)
}

// ParseZeroed is ParseInto into a req that is already the zero Request: it
// does not clear it. A read loop that parses a read's requests into slots
// of its own and clears the slots it used once, after the read (as stepsd's
// does, and the peers in its bench module), saves ParseInto's clear of 128
// bytes and its check of the limits, each request. A req that is not zero
// keeps what the parse does not set (a stale Bad, Key, Text...): the reply
// would be wrong. A req is written only when a request was parsed (n > 0,
// fatal empty); an empty one ("*0") leaves it zero. A Parser whose Limits
// were never set (the zero Limits) takes DefaultLimits, as ParseInto does.
func (p *Parser) ParseZeroed(req *Request, buf []byte) (n int, fatal string) {
	if p.Limits == (Limits{}) {
		p.Limits = DefaultLimits()
	}
	if len(buf) == 0 {
		return 0, ""
	}
	var argc int
	if buf[0] == '*' {
		argc, n, fatal = p.frameArray(buf)
	} else {
		argc, n, fatal = p.frameInline(buf)
	}
	if n == 0 || fatal != "" {
		return 0, fatal
	}
	if argc == 0 {
		return n, "" // OpNone
	}
	req.Args = p.args[:argc]
	p.command(req)
	return n, ""
}

// frameArray frames "*<argc>\r\n" and argc "$<len>\r\n<bytes>\r\n" into
// p.args, aliasing buf.
func (p *Parser) frameArray(buf []byte) (argc, n int, fatal string) {
	lim := &p.Limits
	count, pos, fatal := headerInt(buf, lim.MaxLine, errTooBigCount)
	if pos == 0 || fatal != "" {
		return 0, 0, fatal
	}
	if count > int64(lim.MaxArgs) {
		return 0, 0, errMultiLen
	}
	if count <= 0 {
		return 0, pos, "" // "*0" and "*-1": nothing, as in Redis
	}
	argc = int(count)
	args := p.args[:0]
	for i := 0; i < argc; i++ {
		if pos > lim.MaxRequest {
			return 0, 0, errTooBig
		}
		if pos >= len(buf) {
			return 0, 0, "" // more to come
		}
		if buf[pos] != '$' {
			return 0, 0, errDollar
		}
		blen, hlen, fatal := headerInt(buf[pos:], lim.MaxLine, errTooBigBulkH)
		if hlen == 0 || fatal != "" {
			return 0, 0, fatal
		}
		if blen < 0 || blen > int64(lim.MaxBulk) {
			return 0, 0, errBulkLen
		}
		start := pos + hlen
		end := start + int(blen)
		if end+2 > lim.MaxRequest {
			return 0, 0, errTooBig
		}
		if end+2 > len(buf) {
			return 0, 0, ""
		}
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return 0, 0, errBulkEnd
		}
		args = append(args, buf[start:end:end])
		pos = end + 2
	}
	p.args = args
	return argc, pos, ""
}

// headerInt parses a header line, "<c><integer>\r\n", at buf's start. It
// returns the line's length, 0 while it is incomplete.
func headerInt(buf []byte, maxLine int, tooBig string) (v int64, n int, fatal string) {
	// The common case first: a few digits and "\r\n", read in one pass.
	j := 1
	for ; j < len(buf) && j < 19; j++ {
		c := buf[j]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	if j > 1 && j+1 < len(buf) && buf[j] == '\r' && buf[j+1] == '\n' && j+2 <= maxLine {
		return v, j + 2, ""
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if len(buf) > maxLine {
			return 0, 0, tooBig
		}
		return 0, 0, ""
	}
	if i+1 > maxLine {
		return 0, 0, tooBig
	}
	digits := buf[1:i]
	if len(digits) == 0 || digits[len(digits)-1] != '\r' {
		if buf[0] == '*' {
			return 0, 0, errMultiLen
		}
		return 0, 0, errBulkLen
	}
	v, ok := parseInt(digits[:len(digits)-1])
	if !ok {
		if buf[0] == '*' {
			return 0, 0, errMultiLen
		}
		return 0, 0, errBulkLen
	}
	return v, i + 1, ""
}

// parseInt parses a decimal integer of at most 18 digits, with an optional
// minus sign.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// frameInline frames an inline command: one line of words separated by
// spaces or tabs, a word in double quotes taking Redis's escapes (\n \r \t
// \b \a \\ \" \xHH) or in single quotes (\' only), as redis-cli and
// sdssplitargs write them.
func (p *Parser) frameInline(buf []byte) (argc, n int, fatal string) {
	lim := &p.Limits
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if len(buf) >= lim.MaxLine {
			return 0, 0, errTooBigInline
		}
		return 0, 0, ""
	}
	if i+1 > lim.MaxLine {
		return 0, 0, errTooBigInline
	}
	line := buf[:i]
	if k := len(line); k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	args := p.args[:0]
	if bytes.IndexByte(line, '"') < 0 && bytes.IndexByte(line, '\'') < 0 {
		for len(line) > 0 {
			j := 0
			for j < len(line) && isSpace(line[j]) {
				j++
			}
			line = line[j:]
			if len(line) == 0 {
				break
			}
			j = 0
			for j < len(line) && !isSpace(line[j]) {
				j++
			}
			if len(args) == lim.MaxArgs {
				return 0, 0, errTooManyWords
			}
			args = append(args, line[:j:j])
			line = line[j:]
		}
	} else {
		var ok bool
		if args, ok = p.splitQuoted(args, line); !ok {
			return 0, 0, errQuotes
		}
		if len(args) > lim.MaxArgs {
			return 0, 0, errTooManyWords
		}
	}
	p.args = args
	return len(args), i + 1, ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// splitQuoted is sdssplitargs: the words go to p.scratch, sized first so
// that it does not move while words alias it.
func (p *Parser) splitQuoted(args [][]byte, line []byte) ([][]byte, bool) {
	if cap(p.scratch) < len(line) {
		p.scratch = make([]byte, 0, len(line))
	}
	sc := p.scratch[:0]
	for {
		for len(line) > 0 && isSpace(line[0]) {
			line = line[1:]
		}
		if len(line) == 0 {
			return args, true
		}
		start := len(sc)
		inDQ, inSQ := false, false
		for done := false; !done; {
			switch {
			case inDQ:
				if len(line) == 0 {
					return args, false
				}
				c := line[0]
				switch {
				case c == '\\' && len(line) >= 4 && line[1] == 'x' && isHex(line[2]) && isHex(line[3]):
					sc = append(sc, unhex(line[2])<<4|unhex(line[3]))
					line = line[4:]
				case c == '\\' && len(line) >= 2:
					e := line[1]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					sc = append(sc, e)
					line = line[2:]
				case c == '"':
					// A closing quote must be followed by a space or the end.
					if len(line) > 1 && !isSpace(line[1]) {
						return args, false
					}
					line = line[1:]
					done = true
				default:
					sc = append(sc, c)
					line = line[1:]
				}
			case inSQ:
				if len(line) == 0 {
					return args, false
				}
				c := line[0]
				switch {
				case c == '\\' && len(line) >= 2 && line[1] == '\'':
					sc = append(sc, '\'')
					line = line[2:]
				case c == '\'':
					if len(line) > 1 && !isSpace(line[1]) {
						return args, false
					}
					line = line[1:]
					done = true
				default:
					sc = append(sc, c)
					line = line[1:]
				}
			default:
				if len(line) == 0 {
					done = true
					break
				}
				c := line[0]
				switch {
				case isSpace(c):
					done = true
				case c == '"':
					inDQ = true
				case c == '\'':
					inSQ = true
				default:
					sc = append(sc, c)
				}
				line = line[1:]
			}
		}
		args = append(args, sc[start:len(sc):len(sc)])
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// command sets req's Op and fields from its words. Command names match
// without regard to ASCII case only (Unicode folding would take "ſET"
// for SET).
func (p *Parser) command(req *Request) {
	args := req.Args
	name := args[0]
	argc := len(args)
	switch {
	case asciiFold(name, cmdGet):
		req.Op = OpGet
		if argc != 2 {
			req.Bad = badArity
			return
		}
		req.Key = args[1]
	case asciiFold(name, cmdSet):
		req.Op = OpSet
		switch {
		case argc < 3:
			req.Bad = badArity
		case argc > 3:
			req.Bad = badSyntax // EX, NX...: not supported
		default:
			req.Key, req.Value = args[1], args[2]
		}
	case asciiFold(name, cmdDel):
		req.Op = OpDel
		if argc < 2 {
			req.Bad = badArity
			return
		}
		req.Key = args[1]
	case asciiFold(name, cmdPing):
		switch argc {
		case 1:
			req.Op = OpPing
		case 2:
			req.Op, req.Text = OpEcho, args[1]
		default:
			req.Op, req.Bad = OpPing, badArity
		}
	case asciiFold(name, cmdEcho):
		req.Op = OpEcho
		if argc != 2 {
			req.Bad = badArity
			return
		}
		req.Text = args[1]
	case asciiFold(name, cmdSleep):
		req.Op = OpSleep
		if argc != 2 {
			req.Bad = badArity
			return
		}
		ms, ok := parseInt(args[1])
		if !ok || ms < 0 || ms > MaxSleep {
			req.Bad = badSleep
			return
		}
		req.Ms = ms
	case asciiFold(name, cmdQuit):
		req.Op = OpQuit
	default:
		p.commandOther(req)
	}
}

// commandOther is command for the commands after QUIT: a value type's
// (datacmd.go), or a connection command (OpConst). A function of its own,
// not inlined, so that command, which SET, GET, PING and ECHO run, is as
// it was before the value types.
//
//go:noinline
func (p *Parser) commandOther(req *Request) {
	if args := req.Args; !p.StringsOnly && dataCommand(req) {
		if req.Bad == "" && len(args) > 2 {
			w := p.words[:0]
			for _, a := range args[2:] {
				w = binary.AppendUvarint(w, uint64(len(a)))
				w = append(w, a...)
			}
			p.words = w
			req.Text = w
		}
		return
	}
	req.Op = OpConst
	req.Text, req.Bad = p.constReply(req.Args)
}

// constReply answers the commands a client sends about the connection or
// the server (redis-cli and redis-benchmark on connect, go-redis's HELLO
// and CLIENT SETINFO, twemproxy's SELECT): what Redis would answer, as far
// as a server without databases, persistence or auth can. The reply is a
// constant or composed in p.scratch.
func (p *Parser) constReply(args [][]byte) (reply []byte, bad string) {
	name, argc := args[0], len(args)
	switch {
	case asciiFold(name, cmdCommand):
		if argc >= 2 && asciiFold(args[1], cmdCount) {
			return replyCommandCount, ""
		}
		if argc >= 2 && asciiFold(args[1], cmdDocs) {
			return p.commandDocs(args[2:]), ""
		}
		return replyEmptyArray, "" // COMMAND, COMMAND INFO: no command table to give
	case asciiFold(name, cmdConfig):
		if argc < 2 {
			return nil, badArity
		}
		if !asciiFold(args[1], cmdGetSub) {
			return nil, badSubcmd
		}
		if argc < 3 {
			return nil, badArity
		}
		// Each parameter we know answers its pair; others nothing, as
		// Redis does for an unknown one.
		pairs := 0
		for _, a := range args[2:] {
			for _, kv := range configParams {
				if asciiFold(a, kv[0]) {
					pairs++
				}
			}
		}
		r := appendArrayHeader(p.reply[:0], 2*pairs)
		for _, a := range args[2:] {
			for _, kv := range configParams {
				if asciiFold(a, kv[0]) {
					r = appendBulk(r, kv[0])
					r = appendBulk(r, kv[1])
				}
			}
		}
		p.reply = r
		return r, ""
	case asciiFold(name, cmdHello):
		if argc >= 2 {
			v, ok := parseInt(args[1])
			if !ok {
				return nil, badProtoVer
			}
			if v != 2 {
				return NoProto, ""
			}
		}
		for i := 2; i < argc; i++ { // HELLO alone has no options
			if asciiFold(args[i], cmdAuth) {
				return nil, badAuth
			}
		}
		return replyHello, ""
	case asciiFold(name, cmdClient):
		if argc < 2 {
			return nil, badArity
		}
		sub := args[1]
		switch {
		case asciiFold(sub, cmdSetname), asciiFold(sub, cmdSetinfo):
			if argc < 3 {
				return nil, badArity
			}
			return replyOK, ""
		case asciiFold(sub, cmdGetname):
			return replyNil, ""
		}
		return nil, badSubcmd
	case asciiFold(name, cmdSelect):
		if argc != 2 {
			return nil, badArity
		}
		if v, ok := parseInt(args[1]); !ok || v != 0 {
			return nil, badDB
		}
		return replyOK, ""
	case asciiFold(name, cmdInfo):
		return replyInfo, ""
	case asciiFold(name, cmdAuth):
		return nil, badAuth
	}
	return nil, badUnknown
}

// commandDocs answers COMMAND DOCS [name ...]: the docs of stepsd's own
// commands, all of them or those named (an unknown name is left out, as
// Redis does), composed in p.reply.
func (p *Parser) commandDocs(names [][]byte) []byte {
	if len(names) == 0 {
		return replyCommandDocs
	}
	n := 0
	for _, a := range names {
		for _, d := range allCommandDocs {
			if asciiFold(a, d.name) {
				n++
			}
		}
	}
	r := appendArrayHeader(p.reply[:0], 2*n)
	for _, a := range names {
		for _, d := range allCommandDocs {
			if asciiFold(a, d.name) {
				r = appendBulk(r, d.lower)
				r = append(r, d.doc...)
			}
		}
	}
	p.reply = r
	return r
}

// commandDoc is one command's entry in COMMAND DOCS: its name as asked
// (upper case), as answered (lower case, as Redis names them), and its
// doc, a RESP2 flat map (summary, since, group, arguments).
type commandDoc struct{ name, lower, doc []byte }

// docArg is one argument of a command's doc: name, type and, where it
// has one, the flag "optional" or "multiple".
type docArg struct{ name, typ, flag string }

// newCommandDoc encodes a command's doc as Redis 7 answers COMMAND DOCS,
// the form from which redis-cli builds its interactive help and the
// hints it shows while a command is typed.
func newCommandDoc(name, summary, group string, args ...docArg) commandDoc {
	fields := 3
	if len(args) > 0 {
		fields++
	}
	d := appendArrayHeader(nil, 2*fields)
	for _, kv := range [...][2]string{{"summary", summary}, {"since", "1.0.0"}, {"group", group}} {
		d = appendBulk(d, []byte(kv[0]))
		d = appendBulk(d, []byte(kv[1]))
	}
	if len(args) > 0 {
		d = appendBulk(d, []byte("arguments"))
		d = appendArrayHeader(d, len(args))
		for _, a := range args {
			n := 4
			if a.flag != "" {
				n += 2
			}
			d = appendArrayHeader(d, n)
			d = appendBulk(appendBulk(d, []byte("name")), []byte(a.name))
			d = appendBulk(appendBulk(d, []byte("type")), []byte(a.typ))
			if a.flag != "" {
				d = appendBulk(d, []byte("flags"))
				d = appendArrayHeader(d, 1)
				d = append(d, "+"+a.flag+"\r\n"...)
			}
		}
	}
	return commandDoc{[]byte(name), bytes.ToLower([]byte(name)), d}
}

// commandDocTable: the commands stepsd has, documented as stepsd runs
// them (SET without Redis's options, SLEEP its own).
var commandDocTable = [...]commandDoc{
	newCommandDoc("GET", "Get the value of a key", "string", docArg{"key", "key", ""}),
	newCommandDoc("SET", "Set the string value of a key (no options)", "string", docArg{"key", "key", ""}, docArg{"value", "string", ""}),
	newCommandDoc("DEL", "Delete keys; replies how many existed", "generic", docArg{"key", "key", "multiple"}),
	newCommandDoc("PING", "Ping the server", "connection", docArg{"message", "string", "optional"}),
	newCommandDoc("ECHO", "Echo the given string", "connection", docArg{"message", "string", ""}),
	newCommandDoc("SLEEP", "Reply +OK after the given milliseconds, 0 to 3600000 (stepsd's own; other requests go on)", "server", docArg{"milliseconds", "integer", ""}),
	newCommandDoc("QUIT", "Close the connection", "connection"),
}

// allCommandDocs: stepsd's own commands' docs, then the value types'
// (dataCmds).
var allCommandDocs = func() []commandDoc {
	docs := append([]commandDoc(nil), commandDocTable[:]...)
	for i := range dataCmds {
		docs = append(docs, dataCmds[i].doc)
	}
	return docs
}()

// replyCommandDocs is COMMAND DOCS's reply for every command.
var replyCommandDocs = func() []byte {
	r := appendArrayHeader(nil, 2*len(allCommandDocs))
	for _, d := range allCommandDocs {
		r = append(appendBulk(r, d.lower), d.doc...)
	}
	return r
}()

// asciiFold reports whether word is name (an ASCII word) in either ASCII
// case.
func asciiFold(word, name []byte) bool {
	if len(word) != len(name) {
		return false
	}
	for i, c := range name {
		if w := word[i]; w != c {
			if l := c | 0x20; l < 'a' || l > 'z' || w|0x20 != l {
				return false
			}
		}
	}
	return true
}

var (
	cmdSet     = []byte("SET")
	cmdGet     = []byte("GET")
	cmdDel     = []byte("DEL")
	cmdEcho    = []byte("ECHO")
	cmdPing    = []byte("PING")
	cmdSleep   = []byte("SLEEP")
	cmdQuit    = []byte("QUIT")
	cmdCommand = []byte("COMMAND")
	cmdCount   = []byte("COUNT")
	cmdDocs    = []byte("DOCS")
	cmdConfig  = []byte("CONFIG")
	cmdGetSub  = []byte("GET")
	cmdHello   = []byte("HELLO")
	cmdAuth    = []byte("AUTH")
	cmdClient  = []byte("CLIENT")
	cmdSetname = []byte("SETNAME")
	cmdSetinfo = []byte("SETINFO")
	cmdGetname = []byte("GETNAME")
	cmdSelect  = []byte("SELECT")
	cmdInfo    = []byte("INFO")

	// configParams: CONFIG GET's answers, as redis-benchmark asks them
	// (no persistence).
	configParams = [...][2][]byte{
		{[]byte("save"), []byte("")},
		{[]byte("appendonly"), []byte("no")},
	}
)

// Replies, as written on the wire.
var (
	ReplyOK           = []byte("+OK\r\n")
	ReplyPong         = []byte("+PONG\r\n")
	ReplyNil          = []byte("$-1\r\n")
	replyOK           = ReplyOK
	replyNil          = ReplyNil
	replyEmptyArray   = []byte("*0\r\n")
	replyCommandCount = appendInt(nil, ':', int64(len(allCommandDocs)))
	// replyHello is HELLO's map (a flat array in RESP2), as Redis 7's.
	replyHello = []byte("*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n" +
		"$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n" +
		"$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n")
	replyInfo = appendBulk(nil, []byte("# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nserver_name:stepsd\r\n"))
)

// AppendReply appends the success reply to req to dst. value is GET's
// value; n is how many keys GET found (0 or 1) or DEL deleted. A value
// type's command (Op.Typed) is not answered here: its reply depends on
// the store it applies to (stepsd's, types.go).
func AppendReply(dst []byte, req *Request, value []byte, n int) []byte {
	return appendReply(dst, req.Op, req.Text, value, n)
}

// appendReply is AppendReply from the parts it reads: the server formats
// a reply from a request's own copies, with no Request to build.
func appendReply(dst []byte, op Op, text, value []byte, n int) []byte {
	switch op {
	case OpGet:
		if n == 0 {
			return appendNil(dst)
		}
		return appendBulk(dst, value)
	case OpDel:
		return appendInt(dst, ':', int64(n))
	case OpEcho:
		return appendBulk(dst, text)
	case OpPing:
		return append(dst, '+', 'P', 'O', 'N', 'G', '\r', '\n') // ReplyPong
	case OpConst:
		return append(dst, text...)
	}
	return appendOK(dst)
}

// appendOK and appendNil append ReplyOK and ReplyNil as constant bytes,
// stored by the append itself, rather than a copy of the package variable
// (a call to memmove for five bytes). Shared by AppendReply (the peers in
// the bench module) and stepsd's store, so both pay the same for a reply.
func appendOK(dst []byte) []byte  { return append(dst, '+', 'O', 'K', '\r', '\n') }
func appendNil(dst []byte) []byte { return append(dst, '$', '-', '1', '\r', '\n') }

// AppendError appends the error reply "-code info\r\n" to dst. Line breaks
// in info become spaces, so one reply stays one line.
func AppendError(dst []byte, code, info string) []byte {
	dst = append(dst, '-')
	dst = appendLine(dst, code)
	if info != "" {
		dst = append(dst, ' ')
		dst = appendLine(dst, info)
	}
	return append(dst, '\r', '\n')
}

// AppendBad appends the "-ERR" reply to a refused request: bad (a
// Request.Bad) with its "%s" replaced by name, the command's name as sent
// (at most 64 bytes of it, line breaks as spaces).
func AppendBad(dst []byte, bad string, name []byte) []byte {
	dst = append(dst, "-ERR "...)
	before, after, ok := cutString(bad, "%s")
	dst = appendLine(dst, before)
	if ok {
		if len(name) > 64 {
			name = name[:64]
		}
		for _, c := range name {
			if c == '\r' || c == '\n' {
				c = ' '
			}
			dst = append(dst, c)
		}
		dst = appendLine(dst, after)
	}
	return append(dst, '\r', '\n')
}

func cutString(s, sep string) (before, after string, found bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

func appendLine(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\n' || c == '\r' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// appendBulk appends b as a bulk string. A header of one digit (b shorter
// than 10 bytes: redis-benchmark's values, most ECHOs) is four bytes
// stored at once rather than formatted (appendInt's division loop).
func appendBulk(dst, b []byte) []byte {
	if n := len(b); n < 10 {
		dst = append(dst, '$', byte('0'+n), '\r', '\n')
	} else {
		dst = appendInt(dst, '$', int64(n))
	}
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

func appendArrayHeader(dst []byte, n int) []byte { return appendInt(dst, '*', int64(n)) }

// appendInt appends "<c><v>\r\n". The digits come from v's magnitude as
// a uint64, which the most negative int64 has too (its negation is
// itself, whose uint64 is its magnitude): INCRBY's replies reach it.
func appendInt(dst []byte, c byte, v int64) []byte {
	dst = append(dst, c)
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = uint64(-v)
	}
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	dst = append(dst, d[i:]...)
	return append(dst, '\r', '\n')
}
