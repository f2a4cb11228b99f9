// Package txntest holds what tests of the transaction coordinator share
// across packages.
package txntest

import "sync"

// AckGate holds back the acknowledgement of the coordinator's state
// appends (txn.Config.StateAcknowledged, or a test's own append wrapper):
// the records are in the broker's log, as when its replicas have not
// fetched them yet. Its zero value holds nothing.
type AckGate struct {
	mu   sync.Mutex
	hold chan struct{} // not nil: acknowledgements wait for it to close
}

// Wait returns once no hold is set: call it after an append, before its
// outcome is acted on.
func (g *AckGate) Wait() {
	g.mu.Lock()
	hold := g.hold
	g.mu.Unlock()
	if hold != nil {
		<-hold
	}
}

// HoldAcks makes the acknowledgements waited for from now on wait for
// release. An append made before may still reach Wait after and be held:
// a test that needs its acknowledgement first waits for it.
func (g *AckGate) HoldAcks() (release func()) {
	hold := make(chan struct{})
	g.mu.Lock()
	g.hold = hold
	g.mu.Unlock()
	return sync.OnceFunc(func() {
		g.mu.Lock()
		g.hold = nil
		g.mu.Unlock()
		close(hold)
	})
}
