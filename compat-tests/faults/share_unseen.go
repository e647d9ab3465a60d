package faults

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	// lost are the ShareFetch answers lost (see ShareLostFetch).
	lost []ShareLostFetch
	// logNext is where the client's log lines go (nil: nowhere).
	logNext kgo.Logger
}

// shareDiscardMsg is franz-go's (v1.22) log line for a ShareFetch answer
// that came back after the client had reset its share session (its
// membership lost): it keeps the answer's acknowledgement results and
// drops its records unbuffered, though the broker acquired them for the
// old session (finding 19 of docs/DURABILITY.md, seed 1796621105112687596).
const shareDiscardMsg = "share fetch session was reset mid-flight, extracting ack results only"

// Level is the client log's level, at least info (shareDiscardMsg is
// logged at info).
func (b *shareBuffer) Level() kgo.LogLevel {
	if b.logNext != nil && b.logNext.Level() > kgo.LogLevelInfo {
		return b.logNext.Level()
	}
	return kgo.LogLevelInfo
}

// Log passes a client log line on and notes a discarded ShareFetch answer
// as lost.
func (b *shareBuffer) Log(level kgo.LogLevel, msg string, kv ...any) {
	if msg == shareDiscardMsg {
		node := int32(-1)
		for i := 0; i+1 < len(kv); i += 2 {
			if k, _ := kv[i].(string); k == "broker" {
				if id, ok := kv[i+1].(int32); ok {
					node = id
				}
			}
		}
		l := ShareLostFetch{Consumer: b.name, Node: node, At: time.Since(b.start), Err: "records discarded by the client: share session reset mid-flight"}
		b.mu.Lock()
		b.lost = append(b.lost, l)
		b.mu.Unlock()
	}
	if b.logNext != nil && level <= b.logNext.Level() {
		b.logNext.Log(level, msg, kv...)
	}
}

// ShareLostFetch is a ShareFetch request a consumer's client wrote whose
// answer it did not read (a cut, a killed or cut-off broker), or whose
// records it dropped unread (shareDiscardMsg): the broker
// may have acquired records for it that nobody ever saw, and which ones is
// not known. It explains nothing by itself; a ReleasedLost record's report
// lists those that came after its release.
type ShareLostFetch struct {
	Consumer string
	Node     int32
	// At is when the read failed, since the workload started.
	At  time.Duration
	Err string
}

func (l ShareLostFetch) String() string {
	return fmt.Sprintf("%s's ShareFetch to node %d lost at %v (%s)", l.Consumer, l.Node, l.At.Round(time.Millisecond), l.Err)
}

var (
	_ kgo.HookFetchRecordBuffered   = (*shareBuffer)(nil)
	_ kgo.HookFetchRecordUnbuffered = (*shareBuffer)(nil)
	_ kgo.HookBrokerE2E             = (*shareBuffer)(nil)
	_ kgo.Logger                    = (*shareBuffer)(nil)
)

// OnBrokerE2E notes a ShareFetch written whose answer was not read.
func (b *shareBuffer) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != kmsg.ShareFetch.Int16() || e2e.WriteErr != nil || e2e.ReadErr == nil {
		return
	}
	l := ShareLostFetch{Consumer: b.name, Node: meta.NodeID, At: time.Since(b.start), Err: e2e.ReadErr.Error()}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lost = append(b.lost, l)
}

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

// unseen returns the deliveries buffered and not polled so far, the
// number of records buffered and the ShareFetch answers lost.
func (b *shareBuffer) unseen() ([]ShareUnseen, int, []ShareLostFetch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ShareUnseen, 0, len(b.buf))
	for _, u := range b.buf {
		out = append(out, u)
	}
	return out, b.received, append([]ShareLostFetch(nil), b.lost...)
}

// lostAfter lists the lost ShareFetch answers after at, for a report.
func lostAfter(ls []ShareLostFetch, at time.Duration) string {
	var b strings.Builder
	n := 0
	for _, l := range ls {
		if l.At < at {
			continue
		}
		if n++; n <= 5 {
			fmt.Fprintf(&b, "; %v", l)
		}
	}
	if n > 5 {
		fmt.Fprintf(&b, "; %d more lost ShareFetch answers", n-5)
	}
	if n == 0 {
		return "; no ShareFetch answer lost after it"
	}
	return b.String()
}

// lostBeforeHigher reports whether a ShareFetch answer was lost after
// from (a release's answer of record k) and before the first delivery of
// a higher offset of k's partition acquired after from that a consumer
// received (polled or not), or at any time after from when none was.
func lostBeforeHigher(h *ShareHistory, k shareKey, from time.Duration) bool {
	until := time.Duration(math.MaxInt64)
	for _, d := range h.Deliveries {
		if d.Partition == k.p && d.Offset > k.o && d.Acquired > from {
			until = min(until, d.Acquired)
		}
	}
	for _, u := range h.Unseen {
		if u.Partition == k.p && u.Offset > k.o && u.Acquired > from {
			until = min(until, u.Acquired)
		}
	}
	for _, l := range h.LostFetches {
		if l.At > from && l.At < until {
			return true
		}
	}
	return false
}
