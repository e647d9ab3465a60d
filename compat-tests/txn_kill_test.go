// This file kills the broker with SIGKILL while transactions are in flight: one whose
// commit was acknowledged long before, one whose commit was acknowledged just before
// the kill (its markers may not all be written), and one still open with records in
// the log. After the restart the acknowledged ones must be fully visible to
// read_committed, and the open one must never become visible, in whole or in part: the
// recovered coordinator aborts it when its timeout passes.

package compattests

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnBrokerKillMidTransaction is the all-or-nothing check across a SIGKILL.
func TestTxnBrokerKillMidTransaction(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 120*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	const topic, partitions, n = "txn-kill", 3, 20
	createTopicKadm(t, ctx, adm, topic, partitions, nil)
	across := func(prefix string) []*kgo.Record {
		var recs []*kgo.Record
		for p := range int32(partitions) {
			recs = append(recs, txnRecords(topic, prefix, p, n)...)
		}
		return recs
	}

	committer := newTxnClient(t, b.Addr, "txn-kill-committer")
	runTxn(t, ctx, committer, kgo.TryCommit, across("acked"))
	open := newTxnClient(t, b.Addr, "txn-kill-open", kgo.TransactionTimeout(3*time.Second))
	if err := open.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	produceInTxn(t, ctx, open, across("open"))
	runTxn(t, ctx, committer, kgo.TryCommit, across("last"))
	b.Kill(t)
	committer.Close()
	open.Close()

	b.Restart(t)
	requireCleanStart(t, b)
	took := waitStable(t, ctx, cl, topic, partitions)
	t.Logf("all partitions stable %v after the restart", took.Round(time.Millisecond))
	writeSentinels(t, ctx, b.Addr, topic, partitions)

	got := readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadCommitted())
	openSeen := 0
	for p := range int32(partitions) {
		var acked, last, opened []string
		for _, k := range recordKeys(got[p]) {
			switch {
			case len(k) > 6 && k[:6] == "acked-":
				acked = append(acked, k)
			case len(k) > 5 && k[:5] == "last-":
				last = append(last, k)
			case len(k) > 5 && k[:5] == "open-":
				opened = append(opened, k)
			default:
				t.Errorf("partition %d: unexpected record %q", p, k)
			}
		}
		if !slices.Equal(acked, txnKeys("acked", p, n)) {
			t.Errorf("partition %d: of the transaction committed early, read_committed sees %d of %d records", p, len(acked), n)
		}
		if !slices.Equal(last, txnKeys("last", p, n)) {
			t.Errorf("partition %d: of the transaction committed just before the kill, read_committed sees %d of %d records", p, len(last), n)
		}
		if len(opened) != 0 && len(opened) != n {
			t.Errorf("partition %d: half of the open transaction is visible: %d of %d records", p, len(opened), n)
		}
		openSeen += len(opened)
	}
	if openSeen != 0 {
		t.Errorf("read_committed sees %d records of a transaction that was never committed", openSeen)
	}

	// Every data record survived: read_uncommitted has all three transactions in order.
	got = readUntilSentinels(t, ctx, b.Addr, topic, partitions, kgo.ReadUncommitted())
	for p := range int32(partitions) {
		want := append(append(txnKeys("acked", p, n), txnKeys("open", p, n)...), txnKeys("last", p, n)...)
		if k := recordKeys(got[p]); !slices.Equal(k, want) {
			t.Errorf("read_uncommitted partition %d: %d records %v..., want %d", p, len(k), head(k), len(want))
		}
	}

	// A new producer with the open transaction's id works normally after recovery.
	again := newTxnClient(t, b.Addr, "txn-kill-open")
	runTxn(t, ctx, again, kgo.TryCommit, txnRecords(topic, "after", 0, 3))
}
