package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endV2 sends EndTxn v5 and checks its code; on success it returns the
// producer id and epoch the answer tells the producer to continue with.
func (e *env) endV2(id string, pid int64, epoch int16, commit bool, want *kerr.Error) (int64, int16) {
	e.t.Helper()
	resp := e.end(5, id, pid, epoch, commit)
	wantCode(e.t, "EndTxn v5", resp.ErrorCode, want)
	return resp.ProducerID, resp.ProducerEpoch
}

func (e *env) implicit(id string, pid int64, epoch int16, p TopicPartition, want *kerr.Error) {
	e.t.Helper()
	wantCode(e.t, "implicit add "+p.Topic, e.c.AddPartitionsImplicit(e.t.Context(), id, pid, epoch, p), want)
}

// Transaction version 2: produce adds partitions implicitly, every EndTxn
// bumps the epoch and the markers carry the bumped one.
func TestTV2CommitBumpsEpoch(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("tx", 60000)
	e.implicit("tx", pid, epoch, tp("t", 0), nil)
	e.implicit("tx", pid, epoch, tp("t", 0), nil) // already in
	e.implicit("tx", pid, epoch, tp("__consumer_offsets", 3), nil)
	m, _ := e.meta("tx")
	if m.state != Ongoing || len(m.partitions) != 2 || m.clientTV != 2 {
		t.Fatalf("after implicit adds: %+v", m)
	}
	gotPID, gotEpoch := e.endV2("tx", pid, epoch, true, nil)
	if gotPID != pid || gotEpoch != epoch+1 {
		t.Fatalf("EndTxn v5 answered %d/%d, want %d/%d", gotPID, gotEpoch, pid, epoch+1)
	}
	calls := e.markers.callList()
	if len(calls) != 1 || calls[0].epoch != epoch+1 || !calls[0].commit {
		t.Fatalf("markers %+v, want one commit round at epoch %d", calls, epoch+1)
	}
	e.waitState("tx", CompleteCommit)

	// The answer was lost: the retry with the old epoch gets the same.
	if p, ep := e.endV2("tx", pid, epoch, true, nil); p != pid || ep != epoch+1 {
		t.Fatalf("retry answered %d/%d", p, ep)
	}
	// The retry of a commit must not turn into an abort, and the old
	// epoch cannot write any more.
	e.endV2("tx", pid, epoch, false, kerr.InvalidTxnState)
	e.implicit("tx", pid, epoch, tp("t", 1), kerr.InvalidProducerEpoch)
	e.endV2("tx", pid, epoch-1, true, kerr.ProducerFenced)
	e.endV2("tx", pid+7, epoch+1, true, kerr.InvalidProducerIDMapping)
	// A commit with nothing ongoing is not a transaction.
	e.endV2("tx", pid, epoch+1, true, kerr.InvalidTxnState)

	// The next transaction runs at the bumped epoch.
	e.implicit("tx", pid, epoch+1, tp("t", 1), nil)
	if _, ep := e.endV2("tx", pid, epoch+1, false, nil); ep != epoch+2 {
		t.Fatalf("abort answered epoch %d, want %d", ep, epoch+2)
	}
	e.waitState("tx", CompleteAbort)
	// An abort retried after it completed succeeds; a commit at that
	// epoch did not happen: PRODUCER_FENCED.
	e.endV2("tx", pid, epoch+1, false, nil)
	e.endV2("tx", pid, epoch+1, true, kerr.ProducerFenced)

	// The client transaction version survives a restart.
	e.c.Close()
	e.start()
	m, _ = e.meta("tx")
	if m.clientTV != 2 || m.epoch != epoch+2 || m.state != CompleteAbort {
		t.Fatalf("after restart: %+v", m)
	}
}

// An abort with no transaction ongoing bumps the epoch without markers
// (franz-go aborts after a failed begin this way).
func TestTV2EmptyAbort(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("tx", 60000)
	e.endV2("tx", pid, epoch, true, kerr.InvalidTxnState)
	e.endV2("tx", pid, epoch-1, false, kerr.ProducerFenced)
	if p, ep := e.endV2("tx", pid, epoch, false, nil); p != pid || ep != epoch+1 {
		t.Fatalf("empty abort answered %d/%d", p, ep)
	}
	m := e.waitState("tx", CompleteAbort)
	if m.epoch != epoch+1 || len(e.markers.callList()) != 0 {
		t.Fatalf("empty abort: %+v, %d marker calls", m, len(e.markers.callList()))
	}
	// After a commit, a fresh abort (current epoch) is allowed too.
	e.implicit("tx", pid, epoch+1, tp("t", 0), nil)
	e.endV2("tx", pid, epoch+1, true, nil)
	e.waitState("tx", CompleteCommit)
	e.endV2("tx", pid, epoch+2, false, nil)
	e.waitState("tx", CompleteAbort)
}

// A transaction the coordinator aborts on timeout bumps the epoch; the
// producer's late commit, which carries the epoch before, is
// PRODUCER_FENCED (it did not happen), its abort succeeds.
func TestTV2TimeoutThenLateEnd(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("tx", 1000)
	e.implicit("tx", pid, epoch, tp("t", 0), nil)
	e.clock.Advance(11 * time.Second)
	e.tick()
	m := e.waitState("tx", CompleteAbort)
	if m.epoch != epoch+1 {
		t.Fatalf("timeout abort epoch %d, want %d", m.epoch, epoch+1)
	}
	e.endV2("tx", pid, epoch, true, kerr.ProducerFenced)
	if _, ep := e.endV2("tx", pid, epoch, false, nil); ep != epoch+1 {
		t.Fatalf("late abort answered epoch %d", ep)
	}
}

// Ending with the last epoch rotates to a new producer id at epoch 0; the
// markers carry the bumped last epoch, and a retry with the old id and
// epoch gets the new id.
func TestTV2EpochExhaustion(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init("x", 60000)
	e.setEpoch("x", 32766)
	e.implicit("x", pid, 32766, tp("t", 0), nil)
	newPID, ep := e.endV2("x", pid, 32766, true, nil)
	if newPID == pid || ep != 0 {
		t.Fatalf("exhausted EndTxn answered %d/%d, want a new id at 0", newPID, ep)
	}
	calls := e.markers.callList()
	if c := calls[len(calls)-1]; c.producerID != pid || c.epoch != 32767 {
		t.Fatalf("markers %+v, want old id at 32767", c)
	}
	m := e.waitState("x", CompleteCommit)
	if m.producerID != newPID || m.epoch != 0 || m.prevProducerID != pid || m.nextProducerID != -1 {
		t.Fatalf("after rotation: %+v", m)
	}
	if p, ep := e.endV2("x", pid, 32766, true, nil); p != newPID || ep != 0 {
		t.Fatalf("retry after rotation answered %d/%d", p, ep)
	}
	// The rotation is in the log: next_producer_id on the Prepare record.
	var sawNext bool
	for _, r := range e.logs[e.c.PartitionFor("x")].records(t) {
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			t.Fatal(err)
		}
		if v.NextProducerID == newPID && v.State == kmsg.TransactionState(PrepareCommit) && v.Version == 1 {
			sawNext = true
		}
	}
	if !sawNext {
		t.Fatal("no PrepareCommit record with next_producer_id")
	}
	e.implicit("x", newPID, 0, tp("t", 0), nil)
}

// A TV1 client (EndTxn v4) keeps its epoch across transactions even when
// another id on the same coordinator uses TV2.
func TestTV1Unchanged(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("old", 60000)
	e.addOK("old", pid, epoch, tp("t", 0))
	if r := e.end(4, "old", pid, epoch, true); r.ErrorCode != 0 || r.ProducerEpoch != epoch {
		t.Fatalf("EndTxn v4: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	e.waitState("old", CompleteCommit)
	if c := e.markers.callList()[0]; c.epoch != epoch {
		t.Fatalf("TV1 marker epoch %d, want %d", c.epoch, epoch)
	}
	e.addOK("old", pid, epoch, tp("t", 0))
}
