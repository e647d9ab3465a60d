package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// epochLog is a coordinator.EpochPipelinedLog over a storage.Log whose
// high watermark and leader epoch the test moves: appends wait for the
// test to commit them, as a leader's wait for its ISR.
type epochLog struct {
	l  *storage.Log
	mu sync.Mutex
	// epoch is the leader epoch this node leads in (-1: not the leader);
	// hw the high watermark; failAppend the error appends get.
	epoch      int32
	hw         int64
	failAppend error
	changed    chan struct{} // closed and replaced at every change
}

func newEpochLog(t *testing.T) *epochLog {
	t.Helper()
	l, err := storage.OpenLog(storage.LogOptions{FS: vfs.NewMem(), Dir: "/data/" + share.StateTopic + "-0", Config: storage.DefaultLogConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &epochLog{l: l, epoch: 1, changed: make(chan struct{})}
}

// set changes the log under its lock and wakes the waiters.
func (e *epochLog) set(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn()
	close(e.changed)
	e.changed = make(chan struct{})
}

// commitAll moves the high watermark to the log end.
func (e *epochLog) commitAll() { e.set(func() { e.hw = e.l.LogEndOffset() }) }

func (e *epochLog) Append(batch []byte) error {
	return errors.New("epochLog: Append is not used by pipelined shards")
}

func (e *epochLog) AppendUncommittedInEpoch(batch []byte) (int64, int32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failAppend != nil {
		return 0, 0, e.failAppend
	}
	info, err := e.l.Append(batch)
	if err != nil {
		return 0, 0, err
	}
	return info.LastOffset + 1, e.epoch, nil
}

func (e *epochLog) AppendUncommitted(batch []byte) (int64, error) {
	end, _, err := e.AppendUncommittedInEpoch(batch)
	return end, err
}

func (e *epochLog) WaitCommittedInEpoch(ctx context.Context, epoch int32, offset int64) error {
	for {
		e.mu.Lock()
		lead, hw, ch := e.epoch, e.hw, e.changed
		e.mu.Unlock()
		if lead != epoch {
			return fmt.Errorf("epochLog: %w", kerr.NotLeaderForPartition)
		}
		if hw >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("epochLog: %w", kerr.RequestTimedOut)
		}
	}
}

func (e *epochLog) WaitCommitted(ctx context.Context, offset int64) error {
	e.mu.Lock()
	epoch := e.epoch
	e.mu.Unlock()
	return e.WaitCommittedInEpoch(ctx, epoch, offset)
}

func (e *epochLog) HighWatermark() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hw
}

func (e *epochLog) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	return e.l.Read(offset, maxBytes, maxOffset, minOneBatch)
}
func (e *epochLog) LogStartOffset() int64 { return e.l.LogStartOffset() }
func (e *epochLog) LogEndOffset() int64   { return e.l.LogEndOffset() }

var _ coordinator.EpochPipelinedLog = (*epochLog)(nil)

func startPipelined(t *testing.T, el *epochLog) *Coordinator {
	t.Helper()
	c, err := New(Options{NumPartitions: 1, Log: func(int32) (coordinator.Log, bool) { return el, true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.LoadAll(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// async runs fn on a goroutine and returns a channel with its error.
func async(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

func wantPending(t *testing.T, what string, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s answered (%v) before its write was committed", what, err)
	default:
	}
}

// commitUntil commits everything in the log until ch answers (the call
// may append after a commit), for at most a minute.
func commitUntil(t *testing.T, el *epochLog, ch <-chan error) error {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		el.commitAll()
		select {
		case err := <-ch:
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("no answer within a minute")
	return nil
}

// waitAppended polls, for at most a minute, until the log grows past end
// (the write of ch was appended); ch must not answer before.
func waitAppended(t *testing.T, el *epochLog, end int64, ch <-chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for el.LogEndOffset() == end {
		if time.Now().After(deadline) {
			t.Fatal("the write was not appended within a minute")
		}
		select {
		case err := <-ch:
			t.Fatalf("the write answered (%v) before it was appended and committed", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func wait(t *testing.T, what string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: no answer within a minute", what)
		return nil
	}
}

// TestPipelinedWriteWaitsForCommit: a write is answered only once the
// high watermark passes it; a read of the same key waits for that write
// too (it must not show what may be lost), a read of another key does
// not; the shard serves meanwhile.
func TestPipelinedWriteWaitsForCommit(t *testing.T) {
	el := newEpochLog(t)
	c := startPipelined(t, el)
	ctx := t.Context()
	a, b := testKey("a", 0), testKey("b", 0)
	for _, k := range []share.Key{a, b} {
		wantErr(t, "Initialize", commitUntil(t, el, async(func() error { return c.Initialize(ctx, k, 0, 0) })), nil)
	}

	st := share.State{LeaderEpoch: 1, StartOffset: 4, Batches: []share.Batch{{FirstOffset: 4, LastOffset: 6, DeliveryState: share.StateAcknowledged, DeliveryCount: 1}}}
	end := el.LogEndOffset()
	write := async(func() error { return c.Write(ctx, a, st) })
	// Once the write is in the log, reads of a wait for it.
	waitAppended(t, el, end, write)
	readA := async(func() error {
		got, ok, err := c.Read(ctx, a, 1)
		if err == nil && (!ok || !reflect.DeepEqual(got, st)) {
			err = fmt.Errorf("read %+v %v, want %+v", got, ok, st)
		}
		return err
	})
	if _, ok, err := c.Read(ctx, b, 0); err != nil || !ok {
		t.Fatalf("Read of another key while a's write is in flight: %v %v", ok, err)
	}
	wantPending(t, "Write", write)
	wantPending(t, "Read of the key written", readA)
	el.commitAll()
	wantErr(t, "Write", wait(t, "Write", write), nil)
	wantErr(t, "Read", wait(t, "Read", readA), nil)
}

// TestPipelinedWriteLostWithLeadership: a write appended in leader epoch
// 1, then the node stops leading before it is committed: the answer is
// NOT_COORDINATOR, never success. An append the log refuses is not
// installed: the state stays as it was.
func TestPipelinedWriteLostWithLeadership(t *testing.T) {
	el := newEpochLog(t)
	c := startPipelined(t, el)
	ctx := t.Context()
	k := testKey("a", 0)
	wantErr(t, "Initialize", commitUntil(t, el, async(func() error { return c.Initialize(ctx, k, 0, 0) })), nil)

	el.set(func() { el.failAppend = fmt.Errorf("append: %w", kerr.NotEnoughReplicas) })
	// Kafka's coordinators answer a refused append COORDINATOR_NOT_AVAILABLE
	// (coordinator.WriteError).
	wantErr(t, "Write refused by the log", c.Write(ctx, k, share.State{LeaderEpoch: 1, StartOffset: 9}), kerr.CoordinatorNotAvailable)
	el.set(func() { el.failAppend = nil })
	if st, _, err := c.ReadSummary(ctx, k); err != nil || st.StartOffset != 0 {
		t.Fatalf("state after a refused append: %+v %v, want start offset 0", st, err)
	}

	end := el.LogEndOffset()
	write := async(func() error { return c.Write(ctx, k, share.State{LeaderEpoch: 1, StartOffset: 5}) })
	waitAppended(t, el, end, write)
	el.set(func() { el.epoch = -1 }) // a new leader elsewhere
	wantErr(t, "Write whose leadership was lost", wait(t, "Write", write), kerr.NotCoordinator)
}
