package sharetest

import (
	"context"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// MemPersister is an in-memory share.Persister with the fencing rules of
// share.Persister. It is safe for concurrent use.
type MemPersister struct {
	mu struct {
		sync.Mutex
		states   map[share.Key]share.State
		failNext error
	}
}

var _ share.Persister = (*MemPersister)(nil)

// NewMemPersister returns an empty MemPersister.
func NewMemPersister() *MemPersister {
	p := &MemPersister{}
	p.mu.states = map[share.Key]share.State{}
	return p
}

// Initialize creates or resets k's state: stateEpoch, startOffset, no
// batches and no leader epoch recorded yet.
func (p *MemPersister) Initialize(_ context.Context, k share.Key, stateEpoch int32, startOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.states[k] = share.State{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset}
	return nil
}

// Read returns k's state and records leaderEpoch; an epoch older than the
// one recorded is FENCED_LEADER_EPOCH.
func (p *MemPersister) Read(_ context.Context, k share.Key, leaderEpoch int32) (share.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.mu.states[k]
	if !ok {
		return share.State{}, false, nil
	}
	if leaderEpoch < st.LeaderEpoch {
		return share.State{}, false, kerr.FencedLeaderEpoch
	}
	st.LeaderEpoch = leaderEpoch
	p.mu.states[k] = st
	st.Batches = slices.Clone(st.Batches)
	return st, true, nil
}

// Write replaces k's state: INVALID_REQUEST when k was never initialized,
// FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH when st is older than what is
// stored, or the error FailNextWrite set.
func (p *MemPersister) Write(_ context.Context, k share.Key, st share.State) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.mu.failNext; err != nil {
		p.mu.failNext = nil
		return err
	}
	cur, ok := p.mu.states[k]
	switch {
	case !ok:
		return kerr.InvalidRequest
	case st.StateEpoch < cur.StateEpoch:
		return kerr.FencedStateEpoch
	case st.LeaderEpoch < cur.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	}
	st.Batches = slices.Clone(st.Batches)
	p.mu.states[k] = st
	return nil
}

// Delete removes k's state.
func (p *MemPersister) Delete(_ context.Context, k share.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.mu.states, k)
	return nil
}

// ReadSummary returns k's state without fencing anything.
func (p *MemPersister) ReadSummary(_ context.Context, k share.Key) (share.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.mu.states[k]
	st.Batches = slices.Clone(st.Batches)
	return st, ok, nil
}

// State returns k's stored state (the zero State when there is none).
func (p *MemPersister) State(k share.Key) share.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.mu.states[k]
	st.Batches = slices.Clone(st.Batches)
	return st
}

// FailNextWrite makes the next Write answer err (and change nothing).
func (p *MemPersister) FailNextWrite(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.failNext = err
}
