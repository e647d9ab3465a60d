package share

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// fakePersister is an in-memory share.Persister with the fencing rules of
// persister.go, counting writes, and failing writes on demand.
type fakePersister struct {
	mu       sync.Mutex
	states   map[sharestate.Key]sharestate.State
	writes   int
	failNext error
}

func newFakePersister() *fakePersister {
	return &fakePersister{states: map[sharestate.Key]sharestate.State{}}
}

func (p *fakePersister) Initialize(_ context.Context, k sharestate.Key, stateEpoch int32, startOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.states[k] = sharestate.State{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: startOffset}
	return nil
}

func (p *fakePersister) Read(_ context.Context, k sharestate.Key, leaderEpoch int32) (sharestate.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.states[k]
	if !ok {
		return sharestate.State{}, false, nil
	}
	if leaderEpoch < st.LeaderEpoch {
		return sharestate.State{}, false, kerr.FencedLeaderEpoch
	}
	st.LeaderEpoch = leaderEpoch
	p.states[k] = st
	st.Batches = slices.Clone(st.Batches)
	return st, true, nil
}

func (p *fakePersister) Write(_ context.Context, k sharestate.Key, st sharestate.State) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failNext; err != nil {
		p.failNext = nil
		return err
	}
	cur, ok := p.states[k]
	switch {
	case !ok:
		return kerr.InvalidRequest
	case st.StateEpoch < cur.StateEpoch:
		return kerr.FencedStateEpoch
	case st.LeaderEpoch < cur.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	}
	st.Batches = slices.Clone(st.Batches)
	p.states[k] = st
	p.writes++
	return nil
}

func (p *fakePersister) Delete(_ context.Context, k sharestate.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.states, k)
	return nil
}

func (p *fakePersister) ReadSummary(_ context.Context, k sharestate.Key) (sharestate.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.states[k]
	return st, ok, nil
}

func (p *fakePersister) state(k sharestate.Key) sharestate.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.states[k]
}

func (p *fakePersister) failWrite(err error) {
	p.mu.Lock()
	p.failNext = err
	p.mu.Unlock()
}

var errFakeDown = errors.New("fake persister down")
