package syncprim

import (
	"sync"
	"testing"
)

// The gate's lock bit (gate.lockWord): while it is held an entry fails
// (the caller's enqueue looks again under the lock), Stats reads the word
// without the bit, and the holder's store is the word's next value.
func TestGateLockBitHeld(t *testing.T) {
	m := NewMutex(2, 0)
	s := m.lockWord()
	if _, ok := m.tryEnter(0); ok {
		t.Fatal("tryEnter let a flow in while the gate's lock was held")
	}
	if st := m.Stats(); st.Holders != 0 || st.Queued != 0 {
		t.Fatalf("Stats while locked = %+v, want 0 holders, 0 queued", st)
	}
	m.unlockWord(s + 1) // the holder's change: one holder
	if st := m.Stats(); st.Holders != 1 {
		t.Fatalf("Stats after unlockWord = %+v, want 1 holder", st)
	}
	if _, ok := m.tryEnter(0); !ok {
		t.Fatal("tryEnter failed with a free slot and the lock given up")
	}
	m.release()
	m.release()
	if got := m.state.Load(); got != 0 {
		t.Fatalf("state after two releases = %#x, want 0", got)
	}
}

// Many goroutines take the lock bit, enter and release at once: the
// lock excludes (a plain counter under it, checked by the race
// detector and by its total), and no entry or release is lost.
func TestGateLockBitExcludes(t *testing.T) {
	const goroutines, rounds = 8, 2000
	m := NewMutex(4, 0)
	var guarded int // only under the lock bit
	var wg sync.WaitGroup
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < rounds; j++ {
				s := m.lockWord()
				guarded++
				m.unlockWord(s)
				if _, ok := m.tryEnter(0); ok {
					m.release()
				}
			}
		}()
	}
	wg.Wait()
	if guarded != goroutines*rounds {
		t.Fatalf("guarded = %d, want %d: the lock bit let two in", guarded, goroutines*rounds)
	}
	if got := m.state.Load(); got != 0 {
		t.Fatalf("state after the run = %#x, want 0 (an entry or a release lost)", got)
	}
}

// tryEnterN (a Limiter run's rate entries) fails while the lock bit is
// held, as tryEnter does: an entry counted under the holder's feet would be
// lost when unlockWord stores the holder's word.
func TestGateLockBitHeldRun(t *testing.T) {
	g := NewMutex(4, 0) // tryEnterN is the gate's: a Mutex's will do
	s := g.lockWord()
	if k, _, ok := g.tryEnterN(2, 0); ok || k != 0 {
		t.Fatalf("tryEnterN = %d, %v while the gate's lock was held; want 0, false", k, ok)
	}
	g.unlockWord(s)
	if k, prev, ok := g.tryEnterN(2, 0); !ok || k != 2 || prev&lockBit != 0 {
		t.Fatalf("tryEnterN after unlockWord = %d, %#x, %v; want 2 entries", k, prev, ok)
	}
}
