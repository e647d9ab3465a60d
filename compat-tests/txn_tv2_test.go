// This file checks transaction version 2 (KIP-890 part 2) on the wire, with raw
// requests sent through a franz-go client, since a client hides exactly the steps the
// test needs to take out of order (a late batch of a committed transaction, a retried
// EndTxn):
//
//   - ApiVersions finalizes transaction.version 2, so Kafka 4.x clients use it;
//   - Produce v12+ (v13 here) adds its partition to the transaction (no AddPartitionsToTxn);
//   - EndTxn v5 bumps the producer epoch every time and answers the epoch to go on
//     with; the markers carry the bumped epoch, so a late batch of the ended
//     transaction (old epoch) is INVALID_PRODUCER_EPOCH and can never slip into the
//     next transaction;
//   - a retried EndTxn v5 (old epoch, same outcome) is answered with the new epoch, a
//     commit retried after an abort is PRODUCER_FENCED;
//   - read_committed sees the committed transaction, not the aborted one.

package compattests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// tv2Producer is a transactional producer driven by hand.
type tv2Producer struct {
	t       *testing.T
	cl      *kgo.Client // plain client; requests go to the one broker
	txnID   string
	topic   string
	topicID [16]byte
	id      int64
	epoch   int16
	nextSeq map[int32]int32
}

// produce sends one transactional batch of keys to partition p with the newest
// Produce version both sides speak (v13 here: franz-go picks it, and it names the
// topic by id), at the given epoch and the partition's next sequence, and returns the
// partition's error code (the sequence advances only on success).
func (tp *tv2Producer) produce(ctx context.Context, p int32, epoch int16, keys ...string) int16 {
	tp.t.Helper()
	recs := make([]wire.Record, len(keys))
	for i, k := range keys {
		recs[i] = wire.Record{Key: []byte(k), Value: []byte("tv2")}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: tp.id, ProducerEpoch: epoch,
		BaseSequence: tp.nextSeq[p], Transactional: true, Records: recs,
	})
	if err != nil {
		tp.t.Fatalf("encode batch: %v", err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &tp.txnID
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = tp.topic, tp.topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, tp.cl)
	if err != nil {
		tp.t.Fatalf("Produce: %v", err)
	}
	if resp.Version < 12 {
		tp.t.Fatalf("Produce went out as v%d; transaction version 2 needs v12+", resp.Version)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	if code == 0 {
		tp.nextSeq[p] += int32(len(keys))
	}
	return code
}

// endTxn sends EndTxn v5 with the given epoch and returns its answer.
func (tp *tv2Producer) endTxn(ctx context.Context, epoch int16, commit bool) *kmsg.EndTxnResponse {
	tp.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID = tp.txnID
	req.ProducerID = tp.id
	req.ProducerEpoch = epoch
	req.Commit = commit
	// CONCURRENT_TRANSACTIONS while the markers of the previous end are being
	// written is retriable, as for any client.
	for {
		resp, err := req.RequestWith(ctx, tp.cl)
		if err != nil {
			tp.t.Fatalf("EndTxn v5: %v", err)
		}
		if resp.ErrorCode != kerr.ConcurrentTransactions.Code {
			return resp
		}
		select {
		case <-ctx.Done():
			tp.t.Fatal("EndTxn v5: CONCURRENT_TRANSACTIONS until the deadline")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// describeTxn returns the coordinator's view of the transaction.
func (tp *tv2Producer) describeTxn(ctx context.Context) kmsg.DescribeTransactionsResponseTransactionState {
	tp.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{tp.txnID}
	resp, err := req.RequestWith(ctx, tp.cl)
	if err != nil || len(resp.TransactionStates) != 1 {
		tp.t.Fatalf("DescribeTransactions: %v %+v", err, resp)
	}
	return resp.TransactionStates[0]
}

func TestTxnVersion2RawProtocol(t *testing.T) {
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 60*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	topic := "tv2-raw"
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitTopicReady(t, ctx, adm, topic, 2)

	// The feature that makes Kafka 4.x clients speak transaction version 2.
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	var finalized int16 = -1
	for _, f := range av.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = f.MaxVersionLevel
		}
	}
	if finalized != 2 {
		t.Fatalf("transaction.version finalized at %d, want 2", finalized)
	}

	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, details[topic].Err)
	}
	tp := &tv2Producer{t: t, cl: cl, txnID: "tv2-raw-producer", topic: topic, topicID: details[topic].ID, nextSeq: map[int32]int32{}}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = &tp.txnID
	init.TransactionTimeoutMillis = 60000
	init.ProducerID, init.ProducerEpoch = -1, -1
	for {
		ir, err := init.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("InitProducerId: %v", err)
		}
		if ir.ErrorCode == kerr.CoordinatorLoadInProgress.Code || ir.ErrorCode == kerr.CoordinatorNotAvailable.Code || ir.ErrorCode == kerr.ConcurrentTransactions.Code {
			select {
			case <-ctx.Done():
				t.Fatalf("InitProducerId: %v until the deadline", kerr.ErrorForCode(ir.ErrorCode))
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if ir.ErrorCode != 0 {
			t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
		}
		tp.id, tp.epoch = ir.ProducerID, ir.ProducerEpoch
		break
	}
	e0 := tp.epoch

	// Transaction 1: Produce v12+ with no AddPartitionsToTxn adds partition 0.
	if code := tp.produce(ctx, 0, e0, "t1-a", "t1-b"); code != 0 {
		t.Fatalf("Produce in a new transaction: %v", kerr.ErrorForCode(code))
	}
	st := tp.describeTxn(ctx)
	if st.State != "Ongoing" || len(st.Topics) != 1 || !slices.Equal(st.Topics[0].Partitions, []int32{0}) {
		t.Fatalf("after the implicit add: state %q topics %+v, want Ongoing with %s[0]", st.State, st.Topics, topic)
	}
	r := tp.endTxn(ctx, e0, true)
	if r.ErrorCode != 0 || r.ProducerID != tp.id || r.ProducerEpoch != e0+1 {
		t.Fatalf("EndTxn v5 commit: %v, id %d epoch %d; want id %d epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch, tp.id, e0+1)
	}

	// A late batch of transaction 1 (its epoch) is fenced on either partition, so
	// it cannot open a transaction nobody ends nor join the next one.
	for _, p := range []int32{0, 1} {
		if code := tp.produce(ctx, p, e0, fmt.Sprintf("late-%d", p)); code != kerr.InvalidProducerEpoch.Code {
			t.Errorf("late batch at the old epoch to partition %d: %v, want INVALID_PRODUCER_EPOCH", p, kerr.ErrorForCode(code))
		}
	}
	// The answer to the commit was lost: the retry gets the epoch to go on with.
	if r := tp.endTxn(ctx, e0, true); r.ErrorCode != 0 || r.ProducerEpoch != e0+1 {
		t.Errorf("retried EndTxn v5 commit: %v epoch %d, want success with epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, e0+1)
	}

	// Transaction 2 at the bumped epoch, sequences from 0, then aborted.
	tp.nextSeq = map[int32]int32{}
	if code := tp.produce(ctx, 1, e0+1, "t2-a"); code != 0 {
		t.Fatalf("Produce at the bumped epoch: %v", kerr.ErrorForCode(code))
	}
	if r := tp.endTxn(ctx, e0+1, false); r.ErrorCode != 0 || r.ProducerEpoch != e0+2 {
		t.Fatalf("EndTxn v5 abort: %v epoch %d, want epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, e0+2)
	}
	if r := tp.endTxn(ctx, e0+1, false); r.ErrorCode != 0 || r.ProducerEpoch != e0+2 {
		t.Errorf("retried EndTxn v5 abort: %v epoch %d, want success with epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, e0+2)
	}
	if r := tp.endTxn(ctx, e0+1, true); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("commit retried after the abort: %v, want PRODUCER_FENCED", kerr.ErrorForCode(r.ErrorCode))
	}
	if st := tp.describeTxn(ctx); st.State != "CompleteAbort" || st.ProducerEpoch != e0+2 {
		t.Errorf("after the abort: state %q epoch %d, want CompleteAbort at %d", st.State, st.ProducerEpoch, e0+2)
	}

	// Only transaction 1 is visible to read_committed; read_uncommitted also sees
	// the aborted record; the fenced late batches are nowhere.
	writeSentinels(t, ctx, b.Addr, topic, 2)
	committed := readUntilSentinels(t, ctx, b.Addr, topic, 2, kgo.ReadCommitted())
	if got := recordKeys(committed[0]); !slices.Equal(got, []string{"t1-a", "t1-b"}) {
		t.Errorf("read_committed partition 0: %q, want [t1-a t1-b]", got)
	}
	if got := recordKeys(committed[1]); len(got) != 0 {
		t.Errorf("read_committed partition 1: %q, want nothing (aborted)", got)
	}
	all := readUntilSentinels(t, ctx, b.Addr, topic, 2, kgo.ReadUncommitted())
	if got := recordKeys(all[1]); !slices.Equal(got, []string{"t2-a"}) {
		t.Errorf("read_uncommitted partition 1: %q, want [t2-a]", got)
	}
}
