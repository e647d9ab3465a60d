package txn

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

func TestInitProducerIDNewAndBump(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("a", 60000)
	if pid != 1000 || epoch != 0 {
		t.Fatalf("first init = %d/%d, want 1000/0", pid, epoch)
	}
	pid2, epoch2 := e.init("a", 60000)
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init = %d/%d, want %d/1", pid2, epoch2, pid)
	}
	if p, _ := e.init("b", 60000); p != 1001 {
		t.Fatalf("other id got producer id %d, want 1001", p)
	}

	wantCode(t, "timeout too large", e.initReq(4, "a", int32(time.Hour.Milliseconds())+1, -1, -1).ErrorCode, kerr.InvalidTransactionTimeout)
	wantCode(t, "timeout zero", e.initReq(4, "a", 0, -1, -1).ErrorCode, kerr.InvalidTransactionTimeout)
	wantCode(t, "empty id", e.initReq(4, "", 1000, -1, -1).ErrorCode, kerr.InvalidRequest)
	wantCode(t, "half a producer", e.initReq(4, "a", 1000, 1000, -1).ErrorCode, kerr.InvalidRequest)

	e.pids.fail = true
	wantCode(t, "allocator down", e.initReq(4, "c", 1000, -1, -1).ErrorCode, kerr.CoordinatorNotAvailable)
	e.pids.fail = false

	e.logs[e.c.PartitionFor("a")].setFailAppends(1)
	wantCode(t, "write fails", e.initReq(4, "a", 1000, -1, -1).ErrorCode, kerr.CoordinatorNotAvailable)
	if m, _ := e.meta("a"); m.epoch != 1 {
		t.Fatalf("failed write changed the epoch to %d", m.epoch)
	}
}

func TestCommitFlow(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("tx", 60000)
	e.addOK("tx", pid, epoch, tp("t", 0), tp("t", 1))
	e.addOK("tx", pid, epoch, tp("t", 1)) // already in: no write
	gp := tp("__consumer_offsets", 7)
	wantCode(t, "AddOffsets", e.addOffsets(3, "tx", pid, epoch, gp), nil)
	m, _ := e.meta("tx")
	if m.state != Ongoing || len(m.partitions) != 3 || m.startMs != e.clock.Now().UnixMilli() {
		t.Fatalf("after adds: %+v", m)
	}
	resp := e.end(3, "tx", pid, epoch, true)
	wantCode(t, "EndTxn", resp.ErrorCode, nil)
	calls := e.markers.callList()
	if len(calls) != 1 || !calls[0].commit || calls[0].producerID != pid || calls[0].epoch != epoch ||
		!slices.Equal(calls[0].partitions, []TopicPartition{gp, tp("t", 0), tp("t", 1)}) {
		t.Fatalf("marker calls = %+v", calls)
	}
	m = e.waitState("tx", CompleteCommit)
	if len(m.partitions) != 0 {
		t.Fatalf("complete keeps partitions %v", m.partitions)
	}
	// Retrying the same end succeeds, the other one does not.
	wantCode(t, "EndTxn retry", e.end(3, "tx", pid, epoch, true).ErrorCode, nil)
	wantCode(t, "EndTxn abort after commit", e.end(3, "tx", pid, epoch, false).ErrorCode, kerr.InvalidTxnState)
	// A new transaction starts from CompleteCommit.
	e.clock.Advance(time.Second)
	e.addOK("tx", pid, epoch, tp("u", 0))
	m, _ = e.meta("tx")
	if m.state != Ongoing || len(m.partitions) != 1 || m.startMs != e.clock.Now().UnixMilli() {
		t.Fatalf("second transaction: %+v", m)
	}
	wantCode(t, "abort", e.end(3, "tx", pid, epoch, false).ErrorCode, nil)
	e.waitState("tx", CompleteAbort)

	// The log holds Kafka's states in order.
	var states []State
	for _, r := range e.logs[e.c.PartitionFor("tx")].records(t) {
		m, err := decodeValue("tx", r.Value)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, m.state)
	}
	want := []State{Empty, Ongoing, Ongoing, PrepareCommit, CompleteCommit, Ongoing, PrepareAbort, CompleteAbort}
	if !slices.Equal(states, want) {
		t.Fatalf("logged states %v, want %v", states, want)
	}
}

func TestInvalidTransitions(t *testing.T) {
	e := newEnv(t)
	wantCode(t, "EndTxn unknown id", e.end(3, "x", 1, 0, true).ErrorCode, kerr.InvalidProducerIDMapping)
	pid, epoch := e.init("x", 60000)
	wantCode(t, "EndTxn on Empty", e.end(3, "x", pid, epoch, true).ErrorCode, kerr.InvalidTxnState)
	wantCode(t, "EndTxn wrong pid", e.end(3, "x", pid+1, epoch, true).ErrorCode, kerr.InvalidProducerIDMapping)
	wantCode(t, "EndTxn wrong epoch", e.end(3, "x", pid, epoch+1, true).ErrorCode, kerr.ProducerFenced)
	wantCode(t, "EndTxn wrong epoch v1", e.end(1, "x", pid, epoch+1, true).ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "EndTxn empty id", e.end(3, "", pid, epoch, true).ErrorCode, kerr.InvalidRequest)

	codes := e.add(3, "x", pid+1, epoch, tp("t", 0))
	wantCode(t, "Add wrong pid", codes[tp("t", 0)], kerr.InvalidProducerIDMapping)
	codes = e.add(3, "nobody", pid, epoch, tp("t", 0))
	wantCode(t, "Add unknown id", codes[tp("t", 0)], kerr.InvalidProducerIDMapping)
	codes = e.add(1, "x", pid, epoch-1, tp("t", 0))
	wantCode(t, "Add stale epoch v1", codes[tp("t", 0)], kerr.InvalidProducerEpoch)
	codes = e.add(3, "x", pid, epoch+1, tp("t", 0))
	wantCode(t, "Add other epoch v3", codes[tp("t", 0)], kerr.ProducerFenced)

	codes = e.add(3, "x", pid, epoch, tp("t", 0), tp("t", 11), tp("missing", 0))
	wantCode(t, "unknown partition", codes[tp("t", 11)], kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", codes[tp("missing", 0)], kerr.UnknownTopicOrPartition)
	wantCode(t, "the rest", codes[tp("t", 0)], kerr.OperationNotAttempted)
	// An internal topic first, even before the transactional id (Kafka
	// 4.4, compat-tests/diff fuzzing).
	codes = e.add(3, "", pid, epoch, tp("t", 0), tp("__consumer_offsets", 99))
	wantCode(t, "internal topic", codes[tp("__consumer_offsets", 99)], kerr.TopicAuthorizationFailed)
	wantCode(t, "next to an internal topic", codes[tp("t", 0)], kerr.OperationNotAttempted)
	if m, _ := e.meta("x"); m.state != Empty {
		t.Fatalf("a refused add changed the state to %v", m.state)
	}
	wantCode(t, "AddOffsets wrong epoch v1", e.addOffsets(1, "x", pid, epoch+1, tp("__consumer_offsets", 0)), kerr.InvalidProducerEpoch)
	wantCode(t, "AddOffsets wrong epoch v2", e.addOffsets(2, "x", pid, epoch+1, tp("__consumer_offsets", 0)), kerr.ProducerFenced)
}

func TestFencingByNewProducer(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("f", 60000)
	e.addOK("f", pid, epoch, tp("t", 0))
	// A second instance with the same transactional id: the ongoing
	// transaction is aborted with epoch+1, then the new producer gets +2.
	pid2, epoch2 := e.init("f", 60000)
	if pid2 != pid || epoch2 != epoch+2 {
		t.Fatalf("new instance got %d/%d, want %d/%d", pid2, epoch2, pid, epoch+2)
	}
	calls := e.markers.callList()
	if len(calls) != 1 || calls[0].commit || calls[0].epoch != epoch+1 {
		t.Fatalf("fence markers = %+v", calls)
	}
	// The old instance is fenced.
	wantCode(t, "old Add v3", e.add(3, "f", pid, epoch, tp("t", 1))[tp("t", 1)], kerr.ProducerFenced)
	wantCode(t, "old EndTxn v3", e.end(3, "f", pid, epoch, true).ErrorCode, kerr.ProducerFenced)
	wantCode(t, "old EndTxn v0", e.end(0, "f", pid, epoch, true).ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "old verify", e.c.VerifyProduce(t.Context(), "f", pid, epoch, tp("t", 0)), kerr.InvalidProducerEpoch)
	m, _ := e.meta("f")
	if m.state != Empty || m.epoch != epoch2 {
		t.Fatalf("after fence: %+v", m)
	}
}

func TestFencingWaitsForFailingMarkers(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("f", 60000)
	e.addOK("f", pid, epoch, tp("t", 0))
	e.markers.mu.Lock()
	e.markers.fail = func(call int, _ TopicPartition) int16 {
		if call == 0 {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	e.markers.mu.Unlock()
	// The abort's first round fails: the new instance is told to retry.
	wantCode(t, "init during failing abort", e.initReq(4, "f", 60000, -1, -1).ErrorCode, kerr.ConcurrentTransactions)
	wantCode(t, "add during failing abort", e.add(3, "f", pid, epoch+1, tp("t", 0))[tp("t", 0)], kerr.ConcurrentTransactions)
	e.waitState("f", CompleteAbort)
	_, epoch2 := e.init("f", 60000)
	if epoch2 != epoch+2 {
		t.Fatalf("retry got epoch %d, want %d", epoch2, epoch+2)
	}
}

func TestEndTxnMarkersRetried(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("r", 60000)
	e.addOK("r", pid, epoch, tp("t", 0), tp("t", 1))
	e.markers.mu.Lock()
	e.markers.fail = func(call int, p TopicPartition) int16 {
		if call < 2 && p.Partition == 1 {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	e.markers.mu.Unlock()
	// Prepare is durable: the client hears success although t/1 failed.
	wantCode(t, "EndTxn", e.end(3, "r", pid, epoch, true).ErrorCode, nil)
	wantCode(t, "Add while completing", e.add(3, "r", pid, epoch, tp("t", 2))[tp("t", 2)], kerr.ConcurrentTransactions)
	wantCode(t, "EndTxn retry while completing", e.end(3, "r", pid, epoch, true).ErrorCode, kerr.ConcurrentTransactions)
	wantCode(t, "EndTxn other while completing", e.end(3, "r", pid, epoch, false).ErrorCode, kerr.InvalidTxnState)
	wantCode(t, "verify while completing", e.c.VerifyProduce(t.Context(), "r", pid, epoch, tp("t", 0)), kerr.ConcurrentTransactions)
	e.waitState("r", CompleteCommit)
	calls := e.markers.callList()
	if len(calls) != 3 || !slices.Equal(calls[1].partitions, []TopicPartition{tp("t", 1)}) || !slices.Equal(calls[2].partitions, []TopicPartition{tp("t", 1)}) {
		t.Fatalf("marker calls = %+v", calls)
	}
	e.addOK("r", pid, epoch, tp("t", 2))
}

func TestCompleteWriteRetried(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("w", 60000)
	e.addOK("w", pid, epoch, tp("t", 0))
	gate, called := make(chan struct{}), make(chan struct{}, 1)
	e.markers.mu.Lock()
	e.markers.gate, e.markers.called = gate, called
	e.markers.mu.Unlock()
	done := make(chan int16)
	go func() { done <- e.end(3, "w", pid, epoch, false).ErrorCode }()
	// Wait until the marker round is in flight, then fail the Complete
	// write once.
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("no marker call")
	}
	wantCode(t, "Add while markers in flight", e.add(3, "w", pid, epoch, tp("t", 1))[tp("t", 1)], kerr.ConcurrentTransactions)
	e.logs[e.c.PartitionFor("w")].setFailAppends(1)
	close(gate)
	wantCode(t, "EndTxn", <-done, nil)
	if m, pending := e.meta("w"); m.state != PrepareAbort || !pending {
		t.Fatalf("after failed complete write: %v pending %v", m.state, pending)
	}
	e.waitState("w", CompleteAbort)
}

func TestTimeoutAbortsAndFences(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.AbortTimedOutInterval = 10 * time.Second })
	pid, epoch := e.init("slow", 5000)
	e.addOK("slow", pid, epoch, tp("t", 0))
	e.clock.Advance(4 * time.Second)
	e.tick() // not yet: the check interval has not passed
	e.clock.Advance(7 * time.Second)
	e.tick()
	m := e.waitState("slow", CompleteAbort)
	if m.epoch != epoch+1 {
		t.Fatalf("timed-out abort epoch %d, want %d", m.epoch, epoch+1)
	}
	calls := e.markers.callList()
	if len(calls) != 1 || calls[0].commit || calls[0].epoch != epoch+1 {
		t.Fatalf("markers = %+v", calls)
	}
	wantCode(t, "late commit", e.end(3, "slow", pid, epoch, true).ErrorCode, kerr.ProducerFenced)
	wantCode(t, "late add v1", e.add(1, "slow", pid, epoch, tp("t", 0))[tp("t", 0)], kerr.InvalidProducerEpoch)
	// KIP-360 recovery with the old epoch is fenced too (as in Kafka: the
	// fence forgets the previous epoch).
	wantCode(t, "KIP-360 after timeout", e.initReq(4, "slow", 5000, pid, epoch).ErrorCode, kerr.ProducerFenced)
	if _, ep := e.init("slow", 5000); ep != epoch+2 {
		t.Fatalf("new init epoch %d", ep)
	}
}

func TestKIP360(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init("k", 60000)
	r := e.initReq(4, "k", 60000, pid, 0)
	wantCode(t, "bump with current", r.ErrorCode, nil)
	if r.ProducerID != pid || r.ProducerEpoch != 1 {
		t.Fatalf("bump = %d/%d", r.ProducerID, r.ProducerEpoch)
	}
	r = e.initReq(4, "k", 60000, pid, 0) // the response was lost: a retry
	if r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("retry = %v %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	wantCode(t, "unknown epoch v4", e.initReq(4, "k", 60000, pid, 7).ErrorCode, kerr.ProducerFenced)
	wantCode(t, "unknown epoch v3", e.initReq(3, "k", 60000, pid, 7).ErrorCode, kerr.InvalidProducerEpoch)
	wantCode(t, "other producer id", e.initReq(4, "k", 60000, pid+50, 1).ErrorCode, kerr.ProducerFenced)
	// v2 ignores the fields.
	if r := e.initReq(2, "k", 60000, pid+50, 1); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("v2 = %v %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	// A new id accepts any expectation (the producer lost its id).
	if r := e.initReq(4, "fresh", 60000, 77, 3); r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("fresh = %v %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
}

// setEpoch overwrites an id's epoch durably, to test exhaustion without
// 32k requests.
func (e *env) setEpoch(id string, epoch int16) {
	e.t.Helper()
	s, _ := e.c.shardFor(id)
	s.call(e.t.Context(), func() {
		next := s.txns[id].clone()
		next.epoch = epoch
		s.write(id, next, func(code int16) {
			if code != 0 {
				e.t.Error(kerr.ErrorForCode(code))
			}
		})
	})
}

func TestEpochExhaustion(t *testing.T) {
	e := newEnv(t)
	pid, _ := e.init("x", 60000)
	e.setEpoch("x", 32765)
	if p, ep := e.init("x", 60000); p != pid || ep != 32766 {
		t.Fatalf("last epoch = %d/%d", p, ep)
	}
	r := e.initReq(4, "x", 60000, pid, 32766)
	if r.ErrorCode != 0 || r.ProducerID == pid || r.ProducerEpoch != 0 {
		t.Fatalf("rotation = %v %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	newPID := r.ProducerID
	// The response was lost: the retry names the old id and gets the same.
	r = e.initReq(4, "x", 60000, pid, 32766)
	if r.ErrorCode != 0 || r.ProducerID != newPID || r.ProducerEpoch != 0 {
		t.Fatalf("rotation retry = %v %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	m, _ := e.meta("x")
	if m.prevProducerID != pid {
		t.Fatalf("previous producer id %d", m.prevProducerID)
	}
	// The rotation is written as a v1 value carrying previous_producer_id.
	recs := e.logs[e.c.PartitionFor("x")].records(t)
	last := recs[len(recs)-1].Value
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(last); err != nil || v.Version != 1 || v.PreviousProducerID != pid || v.ProducerID != newPID {
		t.Fatalf("rotated value %+v %v", v, err)
	}

	// An exhausted epoch with an ongoing transaction: the fence takes the
	// last epoch, the markers carry it, and the next init rotates.
	e.setEpoch("x", 32766)
	e.addOK("x", newPID, 32766, tp("t", 0))
	r = e.initReq(4, "x", 60000, -1, -1)
	if r.ErrorCode != 0 || r.ProducerID == newPID || r.ProducerEpoch != 0 {
		t.Fatalf("fence at exhaustion = %v %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	calls := e.markers.callList()
	if c := calls[len(calls)-1]; c.producerID != newPID || c.epoch != 32767 {
		t.Fatalf("fence markers %+v", c)
	}
}

func TestVerify(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("v", 60000)
	ctx := t.Context()
	wantCode(t, "no txn", e.c.VerifyProduce(ctx, "v", pid, epoch, tp("t", 0)), kerr.InvalidTxnState)
	e.addOK("v", pid, epoch, tp("t", 0))
	wantCode(t, "added", e.c.VerifyProduce(ctx, "v", pid, epoch, tp("t", 0)), nil)
	wantCode(t, "not added", e.c.VerifyProduce(ctx, "v", pid, epoch, tp("t", 1)), kerr.InvalidTxnState)
	wantCode(t, "wrong pid", e.c.VerifyProduce(ctx, "v", pid+1, epoch, tp("t", 0)), kerr.InvalidProducerIDMapping)
	wantCode(t, "unknown id", e.c.VerifyProduce(ctx, "nobody", pid, epoch, tp("t", 0)), kerr.InvalidProducerIDMapping)
	gp := tp("__consumer_offsets", 3)
	wantCode(t, "offsets not added", e.c.VerifyTxnOffsetCommit(ctx, "v", pid, epoch, gp), kerr.InvalidTxnState)
	wantCode(t, "AddOffsets", e.addOffsets(3, "v", pid, epoch, gp), nil)
	wantCode(t, "offsets added", e.c.VerifyTxnOffsetCommit(ctx, "v", pid, epoch, gp), nil)

	// AddPartitionsToTxn v4 batches transactions; verify_only writes nothing.
	before := len(e.logs[e.c.PartitionFor("v")].records(t))
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "v", pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = "t", []int32{0, 1}
	tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{tt}
	tx2 := tx
	tx2.TransactionalID, tx2.VerifyOnly = "nobody", false
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx, tx2}
	resp := e.c.AddPartitionsToTxn(ctx, req)
	if len(resp.Transactions) != 2 {
		t.Fatalf("transactions %d", len(resp.Transactions))
	}
	p := resp.Transactions[0].Topics[0].Partitions
	wantCode(t, "verify t/0", p[0].ErrorCode, nil)
	// Kafka 4.4 answers TRANSACTION_ABORTABLE for a partition outside the
	// transaction (seen by compat-tests/diff on an Empty one).
	wantCode(t, "verify t/1", p[1].ErrorCode, kerr.TransactionAbortable)
	wantCode(t, "batched unknown id", resp.Transactions[1].Topics[0].Partitions[0].ErrorCode, kerr.InvalidProducerIDMapping)
	if after := len(e.logs[e.c.PartitionFor("v")].records(t)); after != before {
		t.Fatalf("verify_only wrote %d records", after-before)
	}
	// Not verify_only: v4 adds.
	tx.VerifyOnly = false
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx}
	resp = e.c.AddPartitionsToTxn(ctx, req)
	wantCode(t, "v4 add", resp.Transactions[0].Topics[0].Partitions[1].ErrorCode, nil)
	wantCode(t, "now added", e.c.VerifyProduce(ctx, "v", pid, epoch, tp("t", 1)), nil)

	// Kafka 4.4 judges the partitions of v4+ transactions, verify-only
	// too, before the transactional id: one that does not exist is
	// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED;
	// an internal topic is refused below v4 only (compat-tests/diff
	// fuzzing).
	for _, verify := range []bool{true, false} {
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "nobody", pid, epoch, verify
		t1, t2 := kmsg.NewAddPartitionsToTxnRequestTransactionTopic(), kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		t1.Topic, t1.Partitions = "missing", []int32{0}
		t2.Topic, t2.Partitions = "__transaction_state", []int32{1}
		tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{t1, t2}
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx}
		resp = e.c.AddPartitionsToTxn(ctx, req)
		wantCode(t, fmt.Sprintf("v4 missing (verify %v)", verify), resp.Transactions[0].Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		wantCode(t, fmt.Sprintf("v4 internal (verify %v)", verify), resp.Transactions[0].Topics[1].Partitions[0].ErrorCode, kerr.OperationNotAttempted)
	}
}

func TestNotCoordinatorAndLoading(t *testing.T) {
	e := newEnv(t)
	id := "somewhere"
	p := e.c.PartitionFor(id)
	if !e.c.Owns(id) {
		t.Fatal("Owns false for a loaded partition")
	}
	e.c.UnloadPartition(p)
	if e.c.Owns(id) {
		t.Fatal("Owns true after unload")
	}
	wantCode(t, "init unloaded", e.initReq(4, id, 1000, -1, -1).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "verify unloaded", e.c.VerifyProduce(t.Context(), id, 1, 0, tp("t", 0)), kerr.NotCoordinator)

	gate := make(chan struct{})
	e.logs[p].mu.Lock()
	e.logs[p].readGate = gate
	e.logs[p].next = 1 // something to read
	e.logs[p].mu.Unlock()
	if err := e.c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "init loading", e.initReq(4, id, 1000, -1, -1).ErrorCode, kerr.CoordinatorLoadInProgress)
	lt := e.c.ListTransactions(t.Context(), kmsg.NewPtrListTransactionsRequest())
	wantCode(t, "list loading", lt.ErrorCode, kerr.CoordinatorLoadInProgress)
	e.logs[p].mu.Lock()
	e.logs[p].readGate = nil
	e.logs[p].next = 0
	e.logs[p].mu.Unlock()
	close(gate)
	if err := e.c.WaitLoaded(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "init loaded", e.initReq(4, id, 1000, -1, -1).ErrorCode, nil)

	if err := e.c.LoadPartition(99); err == nil {
		t.Fatal("LoadPartition of a partition out of range succeeded")
	}
}

func TestExpiration(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.IDExpiration = time.Hour
		o.RemoveExpiredInterval = 10 * time.Minute
	})
	pid, epoch := e.init("old", 60000)
	e.init("busy", 60000)
	e.clock.Advance(50 * time.Minute)
	pid2, epoch2 := e.init("busy", 3600000) // used again: stays
	e.addOK("busy", pid2, epoch2, tp("t", 0))
	e.clock.Advance(15 * time.Minute)
	e.tick()
	d := e.c.DescribeTransactions(t.Context(), &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"old", "busy"}})
	wantCode(t, "expired", d.TransactionStates[0].ErrorCode, kerr.TransactionalIDNotFound)
	wantCode(t, "ongoing", d.TransactionStates[1].ErrorCode, nil)
	recs := e.logs[e.c.PartitionFor("old")].records(t)
	if last := recs[len(recs)-1]; last.Value != nil {
		// "old" and "busy" may share a partition; find the tombstone.
		found := false
		for _, r := range recs {
			found = found || (r.Value == nil && string(r.Key) == string(txnKey("old")))
		}
		if !found {
			t.Fatal("no tombstone for the expired id")
		}
	}
	// The old producer's id is unknown now.
	wantCode(t, "expired EndTxn", e.end(3, "old", pid, epoch, true).ErrorCode, kerr.InvalidProducerIDMapping)
	// After a restart the id stays gone.
	e.c.Close()
	e.start()
	d = e.c.DescribeTransactions(t.Context(), &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"old", "busy"}})
	wantCode(t, "expired after restart", d.TransactionStates[0].ErrorCode, kerr.TransactionalIDNotFound)
	if st := d.TransactionStates[1]; st.State != "Ongoing" || len(st.Topics) != 1 {
		t.Fatalf("busy after restart %+v", st)
	}
}

func TestRecovery(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.NumPartitions = 1 })
	// ongoing: an open transaction; preparing: committed but its markers
	// never got written before the crash; done: completed.
	pidO, epO := e.init("ongoing", 3000)
	e.addOK("ongoing", pidO, epO, tp("t", 0))
	pidD, epD := e.init("done", 60000)
	e.addOK("done", pidD, epD, tp("t", 1))
	wantCode(t, "end done", e.end(3, "done", pidD, epD, false).ErrorCode, nil)
	e.waitState("done", CompleteAbort)
	pidP, epP := e.init("preparing", 60000)
	e.addOK("preparing", pidP, epP, tp("t", 2), tp("t", 3))
	e.markers.mu.Lock()
	e.markers.fail = func(int, TopicPartition) int16 { return kerr.NotLeaderForPartition.Code }
	e.markers.mu.Unlock()
	wantCode(t, "end preparing", e.end(3, "preparing", pidP, epP, true).ErrorCode, nil)
	e.c.Close()

	e.markers.mu.Lock()
	e.markers.fail = nil
	n := len(e.markers.calls)
	e.markers.mu.Unlock()
	e.start()
	m := e.waitState("preparing", CompleteCommit)
	if m.producerID != pidP || m.epoch != epP {
		t.Fatalf("recovered %+v", m)
	}
	calls := e.markers.callList()[n:]
	if len(calls) == 0 || !calls[0].commit || !slices.Equal(calls[0].partitions, []TopicPartition{tp("t", 2), tp("t", 3)}) {
		t.Fatalf("markers after recovery %+v", calls)
	}
	if m, _ := e.meta("done"); m.state != CompleteAbort || m.producerID != pidD {
		t.Fatalf("done after recovery %+v", m)
	}
	m, _ = e.meta("ongoing")
	if m.state != Ongoing || len(m.partitions) != 1 || m.timeoutMs != 3000 {
		t.Fatalf("ongoing after recovery %+v", m)
	}
	// Its timeout clock runs on from the original start.
	e.clock.Advance(10 * time.Second) // the default abort check interval
	e.tick()
	e.waitState("ongoing", CompleteAbort)
	// Producer ids and epochs go on after recovery.
	if _, ep := e.init("done", 60000); ep != epD+1 {
		t.Fatalf("epoch after recovery %d", ep)
	}
}

func TestDescribeAndList(t *testing.T) {
	e := newEnv(t)
	pa, ea := e.init("a", 60000)
	start := e.clock.Now()
	e.addOK("a", pa, ea, tp("t", 1), tp("t", 0), tp("s", 4))
	e.init("b", 60000)
	e.clock.Advance(10 * time.Second)
	pc, ec := e.init("c", 30000)
	e.addOK("c", pc, ec, tp("t", 0))

	d := e.c.DescribeTransactions(t.Context(), &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"a", "b", "zz", ""}})
	wantCode(t, "describe empty id", d.TransactionStates[3].ErrorCode, kerr.InvalidRequest)
	a := d.TransactionStates[0]
	if a.ErrorCode != 0 || a.State != "Ongoing" || a.ProducerID != pa || a.TimeoutMillis != 60000 || a.StartTimestamp != start.UnixMilli() ||
		len(a.Topics) != 2 || a.Topics[0].Topic != "s" || !slices.Equal(a.Topics[1].Partitions, []int32{0, 1}) {
		t.Fatalf("describe a %+v", a)
	}
	if b := d.TransactionStates[1]; b.State != "Empty" || b.StartTimestamp != -1 || len(b.Topics) != 0 {
		t.Fatalf("describe b %+v", b)
	}
	wantCode(t, "describe unknown", d.TransactionStates[2].ErrorCode, kerr.TransactionalIDNotFound)

	list := func(edit func(*kmsg.ListTransactionsRequest)) ([]string, *kmsg.ListTransactionsResponse) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = 2
		edit(req)
		resp := e.c.ListTransactions(t.Context(), req)
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		return ids, resp
	}
	if ids, _ := list(func(*kmsg.ListTransactionsRequest) {}); !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("list all %v", ids)
	}
	ids, resp := list(func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Ongoing", "Bogus"} })
	if !slices.Equal(ids, []string{"a", "c"}) || !slices.Equal(resp.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("list ongoing %v %v", ids, resp.UnknownStateFilters)
	}
	// Kafka 4.4 takes the filters as a set: an unknown name sent twice
	// comes back once (compat-tests/diff fuzzing).
	ids, resp = list(func(r *kmsg.ListTransactionsRequest) {
		r.StateFilters = []string{"Bogus", "Ongoing", "Bogus", "Ongoing"}
	})
	if !slices.Equal(ids, []string{"a", "c"}) || !slices.Equal(resp.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("list with duplicate filters %v %v", ids, resp.UnknownStateFilters)
	}
	if ids, _ := list(func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Bogus"} }); len(ids) != 0 {
		t.Fatalf("only unknown states matched %v", ids)
	}
	if ids, _ := list(func(r *kmsg.ListTransactionsRequest) { r.ProducerIDFilters = []int64{pc} }); !slices.Equal(ids, []string{"c"}) {
		t.Fatalf("list by producer %v", ids)
	}
	ids, _ = list(func(r *kmsg.ListTransactionsRequest) {
		r.StateFilters = []string{"Ongoing"}
		r.DurationFilterMillis = 5000
	})
	if !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("list by duration %v", ids)
	}
	pattern := "^[ab]$"
	if ids, _ := list(func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &pattern }); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("list by pattern %v", ids)
	}
	// The pattern matches the whole id, as Kafka 4.4's re2j matches():
	// "x*" matches an empty part of every id, but none whole.
	whole := "a|x*"
	if ids, _ := list(func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &whole }); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("list by whole-id pattern %v", ids)
	}
	// "a)|(b" is invalid alone, though valid once wrapped in a group.
	for _, bad := range []string{"(", "a)|(b"} {
		if _, resp := list(func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &bad }); resp.ErrorCode != kerr.InvalidRegularExpression.Code {
			t.Fatalf("bad pattern %q: %v", bad, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
}

// TestConcurrentTransactions runs many producers at once, each on its own
// transactional id across the partitions, under -race: every transaction
// must end with one marker round of its own outcome.
func TestConcurrentTransactions(t *testing.T) {
	e := newEnv(t)
	const producers, rounds = 12, 8
	errs := make(chan error, producers)
	for i := range producers {
		go func() {
			errs <- func() error {
				id := "p" + string(rune('a'+i))
				pid, epoch := e.initE(id)
				if pid < 0 {
					return errFailed(id, "init", epoch)
				}
				for r := range rounds {
					req := kmsg.NewPtrAddPartitionsToTxnRequest()
					req.Version = 3
					req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
					rt := kmsg.NewAddPartitionsToTxnRequestTopic()
					rt.Topic, rt.Partitions = "t", []int32{int32(i % 10), int32(r % 10)}
					req.Topics = append(req.Topics, rt)
					for _, tt := range e.c.AddPartitionsToTxn(t.Context(), req).Topics {
						for _, p := range tt.Partitions {
							if p.ErrorCode != 0 {
								return errFailed(id, "add", p.ErrorCode)
							}
						}
					}
					if code := e.c.VerifyProduce(t.Context(), id, pid, epoch, tp("t", int32(i%10))); code != 0 {
						return errFailed(id, "verify", code)
					}
					if code := e.end(3, id, pid, epoch, r%2 == 0).ErrorCode; code != 0 {
						return errFailed(id, "end", code)
					}
				}
				return nil
			}()
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	calls := e.markers.callList()
	if len(calls) != producers*rounds {
		t.Fatalf("%d marker calls, want %d", len(calls), producers*rounds)
	}
	perProducer := map[int64][]bool{}
	for _, c := range calls {
		perProducer[c.producerID] = append(perProducer[c.producerID], c.commit)
	}
	for pid, outcomes := range perProducer {
		for r, commit := range outcomes {
			if commit != (r%2 == 0) {
				t.Fatalf("producer %d round %d commit=%v", pid, r, commit)
			}
		}
	}
}

func (e *env) initE(id string) (int64, int16) {
	resp := e.initReq(5, id, 60000, -1, -1)
	if resp.ErrorCode != 0 {
		return -1, resp.ErrorCode
	}
	return resp.ProducerID, resp.ProducerEpoch
}

func errFailed(id, what string, code int16) error {
	return fmt.Errorf("%s %s: %w", id, what, kerr.ErrorForCode(code))
}

// TestUnloadWhileMarkersInFlight moves a partition away while a marker
// round hangs: the round is cancelled, EndTxn (whose Prepare is durable)
// still succeeds, and the next owner finishes the transaction.
func TestUnloadWhileMarkersInFlight(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("u", 60000)
	e.addOK("u", pid, epoch, tp("t", 0))
	gate, called := make(chan struct{}), make(chan struct{}, 1)
	e.markers.mu.Lock()
	e.markers.gate, e.markers.called = gate, called
	e.markers.mu.Unlock()
	done := make(chan int16)
	go func() { done <- e.end(3, "u", pid, epoch, true).ErrorCode }()
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("no marker call")
	}
	p := e.c.PartitionFor("u")
	e.c.UnloadPartition(p)
	wantCode(t, "EndTxn across unload", <-done, nil)
	wantCode(t, "after unload", e.end(3, "u", pid, epoch, true).ErrorCode, kerr.NotCoordinator)
	close(gate)
	if err := e.c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if err := e.c.WaitLoaded(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.waitState("u", CompleteCommit)
}

// TestInitWaitsForPendingMarkers: InitProducerId on an id whose commit
// markers are being retried waits for them, then bumps the epoch.
func TestInitWaitsForPendingMarkers(t *testing.T) {
	e := newEnv(t)
	pid, epoch := e.init("w", 60000)
	e.addOK("w", pid, epoch, tp("t", 0))
	e.markers.mu.Lock()
	e.markers.fail = func(call int, _ TopicPartition) int16 {
		if call == 0 {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	e.markers.mu.Unlock()
	wantCode(t, "EndTxn", e.end(3, "w", pid, epoch, true).ErrorCode, nil)
	got := make(chan *kmsg.InitProducerIDResponse, 1)
	go func() { got <- e.initReq(4, "w", 60000, -1, -1) }()
	s, _ := e.c.shardFor("w")
	deadline := time.Now().Add(5 * time.Second)
	for waiting := false; !waiting; {
		s.call(t.Context(), func() { waiting = s.pending["w"] != nil && len(s.pending["w"].waiters) == 1 })
		if time.Now().After(deadline) {
			t.Fatal("InitProducerId did not wait")
		}
	}
	e.clock.Advance(time.Second)
	e.tick()
	r := <-got
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+1 {
		t.Fatalf("init after markers: %v %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	if m, _ := e.meta("w"); m.state != Empty {
		t.Fatalf("state %v", m.state)
	}
}

// TestLoadAfterBadRecord: a record with a truncated value used to fail the
// partition's load (COORDINATOR_NOT_AVAILABLE forever); it is skipped now
// (issue 11 item 7, see TestLoadSkipsGarbageRecords) and the partition serves.
func TestLoadAfterBadRecord(t *testing.T) {
	e := newEnv(t)
	p := e.c.PartitionFor("x")
	e.c.UnloadPartition(p)
	bad := &memLog{}
	batch, err := encodeBatch(testClockStart, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Append(batch); err != nil {
		t.Fatal(err)
	}
	// A record with a truncated value.
	batch, _ = encodeBatch(testClockStart, []wire.Record{{Key: txnKey("x"), Value: []byte{0, 0, 1}}})
	if err := bad.Append(batch); err != nil {
		t.Fatal(err)
	}
	e.logs[p] = bad
	if err := e.c.LoadPartition(p); err != nil {
		t.Fatal(err)
	}
	if err := e.c.WaitLoaded(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "init on a partition that skipped a bad record", e.initReq(4, "x", 1000, -1, -1).ErrorCode, nil)
}

func TestNewOptions(t *testing.T) {
	for _, o := range []Options{
		{ProducerIDs: &fakePIDs{}, Markers: &fakeMarkers{}},
		{Log: func(int32) (Log, bool) { return nil, false }, Markers: &fakeMarkers{}},
		{Log: func(int32) (Log, bool) { return nil, false }, ProducerIDs: &fakePIDs{}},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Fatalf("New(%+v) = %v", o, err)
		}
	}
	c, err := New(Options{Log: func(int32) (Log, bool) { return nil, false }, ProducerIDs: &fakePIDs{}, Markers: &fakeMarkers{}})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumPartitions() != 50 || c.PartitionFor("my-txn") != c.PartitionFor("my-txn") {
		t.Fatal("defaults")
	}
	if err := c.LoadAll(); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadPartition(0); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("LoadPartition without a log: %v", err)
	}
	c.Close()
	if err := c.LoadPartition(0); err == nil {
		t.Fatal("LoadPartition after Close")
	}
}

// TestPartitionForMatchesKafka pins PartitionFor to Kafka's
// abs(String.hashCode) % 50 for a few ids.
func TestPartitionForMatchesKafka(t *testing.T) {
	c, err := New(Options{Log: func(int32) (Log, bool) { return nil, false }, ProducerIDs: &fakePIDs{}, Markers: &fakeMarkers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// "a".hashCode = 97; "txn".hashCode = 116*31*31 + 120*31 + 110 = 115306; "polygenelubricants"
	// hashes to Integer.MIN_VALUE, which Kafka's Utils.abs maps to 0.
	for id, want := range map[string]int32{"a": 97 % 50, "txn": 115306 % 50, "polygenelubricants": 0} {
		if got := c.PartitionFor(id); got != want {
			t.Fatalf("PartitionFor(%q) = %d, want %d", id, got, want)
		}
	}
}

// TestMarkersForDeletedTopics: a partition deleted during the transaction
// gets no marker (nothing to write to), while __consumer_offsets
// partitions are never checked.
func TestMarkersForDeletedTopics(t *testing.T) {
	var mu sync.Mutex
	deleted := map[string]bool{}
	e := newEnv(t, func(o *Options) {
		o.PartitionExists = func(topic string, _ int32) bool {
			mu.Lock()
			defer mu.Unlock()
			return !deleted[topic]
		}
	})
	pid, epoch := e.init("d", 60000)
	e.addOK("d", pid, epoch, tp("gone", 0), tp("t", 0))
	wantCode(t, "AddOffsets", e.addOffsets(3, "d", pid, epoch, tp("__consumer_offsets", 30)), nil)
	mu.Lock()
	deleted["gone"], deleted["__consumer_offsets"] = true, true
	mu.Unlock()
	wantCode(t, "EndTxn", e.end(3, "d", pid, epoch, true).ErrorCode, nil)
	e.waitState("d", CompleteCommit)
	calls := e.markers.callList()
	if len(calls) != 1 || !slices.Equal(calls[0].partitions, []TopicPartition{tp("__consumer_offsets", 30), tp("t", 0)}) {
		t.Fatalf("markers %+v", calls)
	}
}
