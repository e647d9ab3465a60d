package faults

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ShareUnseen is a delivery a consumer's client received (decoded from a
// ShareFetch answer and buffered) that the consumer never polled: its
// client dropped it from its buffer unpolled, or still held it when it was
// cut off or closed. The broker counted it as a delivery all the same.
type ShareUnseen struct {
	Consumer  string
	Partition int32
	Offset    int64
	Count     int32
	// Acquired is when the client decoded it (its acquisition lock
	// deadline less the lock duration), since the workload started.
	Acquired time.Duration
	// Dropped says the client discarded it from its buffer unpolled
	// (false: it was still buffered when the history was taken).
	Dropped bool `json:",omitempty"`
}

func (u ShareUnseen) String() string {
	how := "still buffered"
	if u.Dropped {
		how = "dropped"
	}
	return fmt.Sprintf("%s count %d acquired %v, never polled (%s)", u.Consumer, u.Count, u.Acquired.Round(time.Millisecond), how)
}

// shareBuffer follows the records one consumer's client buffers, through
// franz-go's buffered/unbuffered fetch record hooks (called for share
// fetches too): a record is entered when buffered and removed when the
// consumer polls it, so what is left are the unseen deliveries.
type shareBuffer struct {
	name  string
	start time.Time
	lock  time.Duration

	mu  sync.Mutex
	buf map[*kgo.Record]ShareUnseen
	// received counts the records buffered.
	received int
}

var (
	_ kgo.HookFetchRecordBuffered   = (*shareBuffer)(nil)
	_ kgo.HookFetchRecordUnbuffered = (*shareBuffer)(nil)
)

// OnFetchRecordBuffered enters a record the client buffered.
func (b *shareBuffer) OnFetchRecordBuffered(r *kgo.Record) {
	u := ShareUnseen{Consumer: b.name, Partition: r.Partition, Offset: r.Offset, Count: r.DeliveryCount(),
		Acquired: r.AcquisitionDeadline().Add(-b.lock).Sub(b.start)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf == nil {
		b.buf = make(map[*kgo.Record]ShareUnseen)
	}
	b.buf[r] = u
	b.received++
}

// OnFetchRecordUnbuffered removes a polled record, and marks one the
// client dropped unpolled.
func (b *shareBuffer) OnFetchRecordUnbuffered(r *kgo.Record, polled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if polled {
		delete(b.buf, r)
		return
	}
	if u, ok := b.buf[r]; ok {
		u.Dropped = true
		b.buf[r] = u
	}
}

// unseen returns the deliveries buffered and not polled so far, and the
// number of records buffered.
func (b *shareBuffer) unseen() ([]ShareUnseen, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ShareUnseen, 0, len(b.buf))
	for _, u := range b.buf {
		out = append(out, u)
	}
	return out, b.received
}
