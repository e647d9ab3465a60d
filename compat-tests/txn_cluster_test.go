package compattests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestTxnAcrossBrokers: transactions in a three-node cluster, where the
// transaction coordinator and the leaders of the partitions written are on
// different brokers.
//
// Regression (found by the fault test bed, compat-tests/faults): a
// transactional produce to a partition led by a broker other than the
// transaction coordinator answered NOT_COORDINATOR forever. The partition
// leader asked only its own transaction coordinator, for the implicit add
// of transaction version 2 (franz-go, Produce v12+) and for the KIP-890
// verification of older clients alike; a transaction could only use
// partitions led by its coordinator's broker. The leader now sends
// AddPartitionsToTxn v5 (broker form) to the coordinator's broker, as
// Kafka's AddPartitionsToTxnManager does.
func TestTxnAcrossBrokers(t *testing.T) {
	c := harness.StartCluster(t, 3, harness.ClusterOptions{})
	ctx := testContext(t, 3*time.Minute)
	addr := c.Brokers[0].Addr
	const topic, partitions = "txn-across-brokers", 6
	_, adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, partitions, 3, nil, topic); err != nil {
		t.Fatalf("create: %v", err)
	}
	var leaders []int32
	if !pollUntil(30*time.Second, func() bool {
		md, err := rawMetadata(ctx, addr, topic)
		if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != partitions {
			return false
		}
		leaders = leaders[:0]
		for _, p := range md.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
			leaders = append(leaders, p.Leader)
		}
		return true
	}) {
		t.Fatal("partitions have no leaders")
	}

	for _, txnID := range []string{"across-a", "across-b", "across-c"} {
		cl := newTxnClient(t, addr, txnID)
		var committed []string
		for round := range 4 {
			var recs []*kgo.Record
			for p := range int32(partitions) {
				recs = append(recs, txnRecords(topic, fmt.Sprintf("%s-r%d", txnID, round), p, 5)...)
			}
			commit := kgo.TryCommit
			if round == 2 {
				commit = kgo.TryAbort
			}
			runTxn(t, ctx, cl, commit, recs)
			if commit == kgo.TryCommit {
				for _, r := range recs {
					committed = append(committed, string(r.Key))
				}
			}
		}
		// The coordinator of this id must differ from some partition's
		// leader, or the test did not cross brokers.
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = txnID, 1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("FindCoordinator: %v", err)
		}
		coord := resp.NodeID
		if len(resp.Coordinators) > 0 {
			coord = resp.Coordinators[0].NodeID
		}
		crossed := slices.ContainsFunc(leaders, func(l int32) bool { return l != coord })
		if !crossed {
			t.Errorf("%s: coordinator %d leads every partition (%v): nothing crossed brokers", txnID, coord, leaders)
		}
		cl.Close()
		t.Logf("%s: coordinator on node %d, partition leaders %v, %d records committed", txnID, coord, leaders, len(committed))
	}

	writeSentinels(t, ctx, addr, topic, partitions)
	got := readUntilSentinels(t, ctx, addr, topic, partitions, kgo.ReadCommitted())
	total := 0
	for p, recs := range got {
		for _, r := range recs {
			if r.Partition != p {
				t.Errorf("record %q in partition %d read from %d", r.Key, r.Partition, p)
			}
		}
		total += len(recs)
	}
	// 3 ids x 3 committed rounds x 6 partitions x 5 records; the aborted
	// round of each id is invisible.
	if want := 3 * 3 * partitions * 5; total != want {
		t.Fatalf("read_committed saw %d records, want %d", total, want)
	}
	for p, recs := range got {
		for _, r := range recs {
			if strings.Contains(string(r.Key), "-r2-") {
				t.Errorf("partition %d: aborted record %q visible", p, r.Key)
			}
		}
	}
}
