package broker

import (
	"fmt"
	"sync"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// producerIDs hands out producer ids from blocks the controller allocates
// through the metadata log (Kafka's RPCProducerIdManager taking blocks
// from AllocateProducerIds): an id is durable in the metadata log before
// it is handed out, so ids never repeat, also when a broker loses its
// files. Ids left in a block at a restart are skipped, as in Kafka.
type producerIDs struct {
	allocate func() (first, size int64, err error)

	// mu is held across an allocation: blocks are rare (one per
	// controller.ProducerIDBlockSize ids) and an id must not be handed out
	// before its block is committed.
	mu struct {
		sync.Mutex
		next, end int64
	}
}

// newProducerIDs returns the allocator of node nodeID. If dir holds the
// producer id block file of an older samsa, its first block starts at or
// above the recorded end, and the file is removed once that block is
// committed.
func newProducerIDs(allocate func(floor int64) (first, size int64, err error), fsys vfs.FS, dir string) (*producerIDs, error) {
	p := &producerIDs{allocate: func() (int64, int64, error) { return allocate(0) }}
	floor, found, err := storage.ReadProducerIDBlock(fsys, dir)
	if err != nil {
		return nil, err
	}
	if !found {
		return p, nil
	}
	first, size, err := allocate(floor)
	if err != nil {
		return nil, fmt.Errorf("migrating %s: %w", storage.ProducerIDBlockFile, err)
	}
	if err := storage.RemoveProducerIDBlock(fsys, dir); err != nil {
		return nil, err
	}
	p.mu.next, p.mu.end = first, first+size
	return p, nil
}

// Next returns a fresh producer id. A failed allocation is returned to the
// caller (the client retries); the next call tries again.
func (p *producerIDs) Next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.next >= p.mu.end {
		first, size, err := p.allocate()
		if err != nil {
			return -1, err
		}
		p.mu.next, p.mu.end = first, first+size
	}
	id := p.mu.next
	p.mu.next++
	return id, nil
}
