package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// TestStaleTxnCoordinatorEndTxn replays the INVALID_TXN_STATE that a
// consume-transform-produce member's EndTxn got right after the
// transaction coordinator moved away from an isolated node
// (docs/DURABILITY.md). A transaction version 2 producer (Produce v12+,
// EndTxn v5: no AddPartitionsToTxn, the partition leader adds the
// partition itself) starts with the coordinator on node C1; C1 is cut
// off from the other nodes (clients still reach it) and the coordinator
// moves to C2. The producer's next batch goes to a partition leader on
// the healthy side, which adds the partition at the coordinator its
// metadata names, C2; the producer's EndTxn still goes to the
// coordinator it knows, C1, which has not heard of the transaction (it
// is Empty in C1's memory: nothing it wrote failed, so nothing holds the
// answer) and answers INVALID_TXN_STATE, as Kafka's TransactionCoordinator
// answers from its memory too. C2 completes the commit. Run with
// SAMSA_FAULTS_EXTRA=1 (run.sh --extra): it documents a behaviour, it
// guards no fix.
func TestStaleTxnCoordinatorEndTxn(t *testing.T) {
	extraTests(t)
	c := StartCluster(t, Config{Nodes: 3})
	if c.Net == nil {
		t.Skip("needs a network that can cut links")
	}
	ctx := context.Background()
	const topic, txnID = "staletxn", "staletxn-id"
	if err := CreateTopic(ctx, c.Addrs(), QueueOptions{Topic: topic, Partitions: 3}, 3); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequestTimeoutOverhead(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	nm := &Nemesis{C: c, Topic: "__transaction_state", Partitions: 5, RF: 3, Logf: t.Logf}

	var c1 int32
	var pid int64
	var epoch int16
	err = pollUntil(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		if c1, err = nm.coordinator(ctx, txnID, 1); err != nil {
			return false, err
		}
		if full, state, err := nm.isrFull(ctx); err != nil || !full {
			return false, fmt.Errorf("ISR of __transaction_state: %s: %w", state, err)
		}
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(txnID)
		req.TransactionTimeoutMillis = 60000
		resp, err := req.RequestWith(ctx, cl.Broker(int(c1)))
		if err != nil {
			return false, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return false, err
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return true, nil
	})
	if err != nil {
		t.Fatalf("InitProducerID: %v", err)
	}
	t.Logf("transaction coordinator %d, producer %d epoch %d", c1, pid, epoch)

	if err := nm.partition([][]int{{int(c1) - 1}, others(len(c.Nodes), int(c1)-1)}, "the transaction coordinator"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Net.Heal(); err != nil {
			t.Errorf("healing: %v", err)
		}
	}()
	// Ask a healthy node until the coordinator moved.
	healthy := cl.Broker(int(others(len(c.Nodes), int(c1)-1)[0]) + 1)
	var c2 int32
	err = pollUntil(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{txnID}
		resp, err := req.RequestWith(ctx, healthy)
		if err != nil {
			return false, err
		}
		co := resp.Coordinators[0]
		if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
			return false, err
		}
		c2 = co.NodeID
		return c2 != c1, nil
	})
	if err != nil {
		t.Fatalf("the coordinator did not move: %v", err)
	}
	t.Logf("the coordinator moved to %d", c2)

	// Produce to a partition led on the healthy side, until it takes
	// the batch (its leader may not know the new coordinator yet).
	acl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()[c2-1]))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 0,
		Transactional: true, BaseTimestamp: time.Now().UnixMilli(), Records: []wire.Record{{Value: []byte("v")}}})
	if err != nil {
		t.Fatal(err)
	}
	var leader int32
	err = pollUntil(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, err
		}
		td := md.Topics[topic]
		p := -1
		for _, pd := range td.Partitions {
			if pd.Leader >= 0 && pd.Leader != c1 && pd.Err == nil {
				p, leader = int(pd.Partition), pd.Leader
				break
			}
		}
		if p < 0 {
			return false, errors.New("no partition led on the healthy side")
		}
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID = kmsg.StringPtr(txnID)
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			return false, err
		}
		if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
			return false, fmt.Errorf("produce to %s/%d on %d: %w", rt.Topic, p, leader, err)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("transactional produce on the healthy side: %v", err)
	}
	t.Logf("produced to a partition led by %d", leader)

	endTxn := func(node int32) (int16, error) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, true
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		if err != nil {
			return 0, err
		}
		t.Logf("EndTxn v%d to node %d: %v", req.Version, node, kerr.ErrorForCode(resp.ErrorCode))
		return resp.ErrorCode, nil
	}
	code, err := endTxn(c1)
	if err != nil {
		t.Fatal(err)
	}
	if code != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn to the cut-off old coordinator: %v, want INVALID_TXN_STATE (its memory has no transaction)", kerr.ErrorForCode(code))
	}
	code, err = endTxn(c2)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Errorf("EndTxn to the new coordinator: %v, want success", kerr.ErrorForCode(code))
	}
}
