package txn

import (
	"fmt"
	"testing"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// storage's producer id allocator is what the broker passes as ProducerIDs.
var _ ProducerIDs = (*storage.ProducerIDAllocator)(nil)

// TestStorageLogRestart runs transactions through real storage logs with
// small segments, so that loading reads across segment boundaries, then
// reopens the logs and a new coordinator over them.
func TestStorageLogRestart(t *testing.T) {
	fs := vfs.NewMem()
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = 2048
	open := func() map[int32]*storage.Log {
		out := map[int32]*storage.Log{}
		for p := range int32(2) {
			l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: fmt.Sprintf("/data/%s-%d", TransactionStateTopic, p), Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			out[p] = l
		}
		return out
	}
	logs := open()
	e := newEnv(t, func(o *Options) {
		o.NumPartitions = 2
		o.Log = func(p int32) (Log, bool) {
			l, ok := logs[p]
			if !ok {
				return nil, false
			}
			return StorageLog(l), true
		}
	})
	type want struct {
		pid   int64
		epoch int16
		state State
	}
	wants := map[string]want{}
	for i := range 40 {
		id := fmt.Sprintf("tx-%d", i%9)
		pid, epoch := e.init(id, 60000)
		e.addOK(id, pid, epoch, tp("t", int32(i%3)))
		if i%4 == 3 {
			wants[id] = want{pid, epoch, Ongoing} // left open
			continue
		}
		commit := i%2 == 0
		wantCode(t, "EndTxn", e.end(3, id, pid, epoch, commit).ErrorCode, nil)
		st := CompleteAbort
		if commit {
			st = CompleteCommit
		}
		e.waitState(id, st)
		wants[id] = want{pid, epoch, st}
	}
	e.c.Close()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}

	logs = open()
	e.start()
	for id, w := range wants {
		m, pending := e.meta(id)
		if m == nil || pending || m.producerID != w.pid || m.epoch != w.epoch || m.state != w.state {
			t.Fatalf("%s after restart: %+v pending %v, want %+v", id, m, pending, w)
		}
	}
	e.c.Close()
	for _, l := range logs {
		_ = l.Close()
	}
}
