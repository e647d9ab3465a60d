// Package sharetest provides an in-memory share.Persister for tests of the
// packages that use one (the share-partition leader in broker/share, the
// ShareFetch and ShareAcknowledge handlers), so that each does not write its
// own.
//
// MemPersister keeps the fencing rules that coordinator/share's Persister
// documents (a Read records the leader epoch and refuses an older one; a
// Write needs an initialized key, the current state epoch and at least the
// recorded leader epoch), and can fail the next Write on demand:
//
//	p := sharetest.NewMemPersister()
//	p.Initialize(ctx, k, 0, -1)
//	m := share.NewManager(share.Options{Persister: p})
//	...
//	p.FailNextWrite(errDown) // the next Write answers errDown
//	if p.State(k).StartOffset != 3 { ... }
package sharetest
