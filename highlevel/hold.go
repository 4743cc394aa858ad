package highlevel

import "sync/atomic"

// A holder is what a graph holds while it may run: the Memory its work
// names and the Modules whose kernels it launches. A capture holds each
// once (capture.keep) and hands them to its Graph, and each GraphExec
// holds them again; Free and Close of a held object are left to its last
// unhold, which gives it back once the work queued until then has run.
type holder interface {
	hold()
	unhold()
}

// A holdCount is a holder's count: the holds times two, plus one once the
// object was released (Free, Close). The zero value has none.
type holdCount struct{ n atomic.Int32 }

func (c *holdCount) add() { c.n.Add(2) }

// done ends a hold and reports whether it was the last one of a released
// object, whose release is then the caller's to carry out.
func (c *holdCount) done() bool { return c.n.Add(-2) == 1 }

// release marks the object released and reports whether holds remain: the
// last done carries the release out.
func (c *holdCount) release() bool { return c.n.Or(1) != 0 }

// unholdAll ends a hold on each of held.
func unholdAll(held []holder) {
	for _, h := range held {
		h.unhold()
	}
}
