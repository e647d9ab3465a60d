package share

import (
	"errors"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/share/sharetest"
)

// fakePersister is the in-memory share.Persister of sharetest, with the
// short names this package's tests use.
type fakePersister struct{ *sharetest.MemPersister }

func newFakePersister() *fakePersister {
	return &fakePersister{sharetest.NewMemPersister()}
}

func (p *fakePersister) state(k sharestate.Key) sharestate.State { return p.State(k) }

func (p *fakePersister) failWrite(err error) { p.FailNextWrite(err) }

var errFakeDown = errors.New("fake persister down")
