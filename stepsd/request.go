package stepsd

import (
	"time"

	"github.com/asyncsteps/asyncsteps/engine"
	"github.com/asyncsteps/asyncsteps/reactor"
)

// request is one request and everything it needs, pooled per shard. It
// runs as a step of a flow (flow.go): its read's, or one split off; the
// flow's steps find it as the flow's cur.
type request struct {
	fl   *flow  // the flow that runs it
	sh   *shard // where the flow runs (the connection's shard)
	cn   *conn
	next *request // in cn's queue or the shard's free list

	op  Op
	cmd uint8  // cmdIndex(op, bad): its counters in shard.cmds and its flow's name
	at  int64  // arrival, on the reactor's coarse clock (Metrics.Commands)
	bad string // parse error: answered InvalidRequest
	key []byte // the key (DEL's first; a refused command's name)
	val []byte // SET's value, ECHO's text, OpConst's reply, a value type command's words after its key (Request.Text); DEL's other keys, each after its uvarint length
	// borrowed: key and val (but a DEL's val) are the read's bytes, valid
	// until OnData returns; own copies them into ownKey and ownVal, the
	// buffers the request keeps from run to run.
	borrowed       bool
	ownKey, ownVal []byte
	held           int // len(key)+len(val) when it started, counted in cn.held
	ms             int64
	res            []byte // GET's value; a value type command's reply, encoded (then val)
	n              int    // GET: keys found (0 or 1); DEL: keys deleted

	errCode, errInfo string
	done             bool // the reply is known

	ext        engine.External // the waiting step of a SLEEP or of a key command waiting for its turn
	timer      reactor.Timer   // SLEEP's
	ready      bool            // in execStep: its key command waits for its turn
	dispatched bool            // its key command was applied to the store

	// On the shard's deadline list (deadline.go) while it waits.
	waiting      bool
	deadline     int64 // monoNow time of its Timeout
	wprev, wnext *request
}

// requestOf is the request whose step as is (or is inside of), once
// execStep has taken it.
func requestOf(as *engine.Steps) *request { return flowOf(as).cur }

// serveError turns a failure into its request's reply, and recovers: the
// flow goes on to its next request, whose reply is its own. A section
// refused at its entry (DefenseRejected) never ran execStep: its request
// is the flow's next (a split flow has no step after its last request's:
// splitRest).
//
// fl is the flow as belongs to (flow.onError binds it).
func (fl *flow) serveError(as *engine.Steps, code string) {
	// A panic inside the store's lock (stripe.lock): given back before
	// anything here takes a stripe's lock (dispatchKeyed). The defer is
	// for a panic in dispatchKeyed's own commands; an error path, not a
	// request's.
	keys, held := fl.sh.s.keys, &fl.sh.held
	keys.unlockHeld(held)
	defer keys.unlockHeld(held)
	rq := fl.cur
	if (rq == nil || rq.done) && fl.next != nil {
		rq = fl.take()
	}
	// Answered already (a request timed out by the sweep, whose cancel is
	// on its way): the reply stands, and the request may be back in the
	// pool (cn nil).
	if rq != nil && rq.cn != nil && !rq.done {
		rq.answerError(code, as.State().ErrorInfo)
		if rq.cn.cursor == rq {
			rq.cn.dispatchKeyed(nil, nil) // it failed before its turn: the next may go
		}
	}
	as.Success()
}

// execStepOf returns fl's step function, which does a request's work
// inside the Limiter (flow.exec). Its body is the closure's own, not a
// call to a method: a method value adds a wrapper's call per request.
func execStepOf(fl *flow) engine.ExecFunc {
	return func(as *engine.Steps) {
		rq := fl.take()
		if rq == nil {
			strayStep(as)
			return
		}
		switch rq.op {
		case OpEcho, OpPing, OpConst, OpQuit:
			rq.answered()
		case OpSleep:
			rq.ext = as.External()
			as.SetCancel(cancelSleep)
			rq.timer = reactor.AfterTo(rq.sh.r, time.Duration(rq.ms)*time.Millisecond, sleepDone, rq, 0)
			return
		default:
			// Key commands apply in the connection's order: this one goes
			// when every earlier one of its connection has gone. That is
			// now, unless the Limiter let an earlier one in later.
			cn := rq.cn
			if cn.cursor == rq && cn.turnWaits == 0 && !rq.done {
				// The common case: it is the next to go and no later one
				// waits for its turn, so dispatchKeyed would apply it
				// and stop at the next.
				rq.dispatched = true
				cn.cursor = rq.next
				rq.sh.s.keys.apply(rq, &rq.sh.held)
				rq.answered()
				break
			}
			rq.ready = true
			cn.dispatchKeyed(as, rq)
			if !rq.dispatched {
				cn.turnWaits++
				rq.ext = as.External() // its turn comes in dispatchKeyed
				return
			}
		}
	}
}

// resume ends the wait of rq's step (a SLEEP, or a key command whose turn
// came), answered: its flow goes on to its next request, or ends.
func (rq *request) resume() {
	rq.ext.Success()
}

// own makes rq's key and val its own copies, if they are the read's bytes.
// runNow calls it, before OnData returns, for the requests of the read that
// are still in the queue once their flows have run: their key and text
// are read later (by a key command's turn, by flush).
func (rq *request) own() {
	if !rq.borrowed {
		return
	}
	rq.borrowed = false
	rq.ownKey = append(rq.ownKey[:0], rq.key...)
	rq.key = rq.ownKey
	if rq.op != OpDel {
		rq.ownVal = append(rq.ownVal[:0], rq.val...)
		rq.val = rq.ownVal
	}
}

// keyed reports whether rq is a command on a key.
func (rq *request) keyed() bool {
	return rq.bad == "" && keyedOp(rq.op)
}

// keyedOp reports whether op is a command on keys: SET, GET, DEL, or a
// value type's (datacmd.go). It tests that op is not one of the commands
// numbered from OpEcho to opFirstData-1, which are not on keys: one
// subtraction and one compare, as the test of SET, GET or DEL before the
// value types was (OpNone passes too, but is never a request's).
func keyedOp(op Op) bool {
	return op-OpEcho > opFirstData-1-OpEcho
}

func sleepDone(rq *request, _ uint64) {
	rq.timer = reactor.Timer{}
	if rq.done {
		return // timed out in the same timer round (sweep): its cancel is posted
	}
	rq.answered()
	rq.resume()
}

// cancelSleep stops the timer of a SLEEP that timed out, so it cannot fire
// into the request's next life.
func cancelSleep(as *engine.Steps) {
	rq := requestOf(as)
	rq.sh.r.Stop(rq.timer)
	rq.timer = reactor.Timer{}
}

// answerError answers rq with an error reply, counted failed.
func (rq *request) answerError(code, info string) {
	rq.errCode, rq.errInfo = code, info
	rq.sh.cmds[rq.cmd].failed++
	rq.answered()
}

// answered notes that rq's reply is known; the flow ends right after, with
// no step of its own (the Limiter section, if any, is left first). The
// reply is written by runNow when the flow ran there, else by the shard's
// end-of-iteration task, once the other flows that became ready with it
// have run too. A request whose flow is still ending when its reply is
// written goes back to the pool at once: newRequest takes a pooled request
// only once its root no longer executes.
func (rq *request) answered() {
	cn := rq.cn
	rq.done = true
	cn.undone--
	cn.sh.unwatch(rq)
	if cn == cn.sh.inline {
		return // runNow writes it once the flows it runs have run
	}
	if !cn.dirty {
		cn.dirty = true
		cn.sh.dirty = append(cn.sh.dirty, cn)
		cn.sh.schedule()
	}
}
