// This file runs exactly-once consume-transform-produce with franz-go's
// GroupTransactSession: two sessions in one group read an input topic and write one
// output record per input record (header src = input topic/partition/offset), each
// batch in a transaction that also commits the group's offsets. Mid-way, one session is
// abandoned with a transaction open (its client closed without ending it) and replaced
// by a new one with the same transactional id; in the second test the broker is killed
// with SIGKILL and restarted instead. At the end every input record must appear in the
// read_committed output exactly once.

package compattests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// srcHeader names the output record header holding the input's topic/partition/offset.
const srcHeader = "src"

// errCTPAbandoned is what a session returns when the test abandons it mid-transaction.
var errCTPAbandoned = errors.New("compat-tests: session abandoned with its transaction open")

// produceCTPInput writes n records round-robin over the partitions of topic (not
// transactionally) and returns, for each, the src header its output must carry mapped
// to the output value: "out:" + the input value.
func produceCTPInput(t *testing.T, ctx context.Context, addr, topic string, partitions int32, n int) map[string]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i) % partitions,
			Key: fmt.Appendf(nil, "in-%d", i), Value: fmt.Appendf(nil, "input-value-%06d", i)}
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	want := make(map[string]string, n)
	for _, r := range res {
		want[fmt.Sprintf("%s/%d/%d", topic, r.Record.Partition, r.Record.Offset)] = "out:" + string(r.Record.Value)
	}
	return want
}

// checkExactlyOnce checks that the output records carry each wanted src header exactly
// once, with the transformed value, and nothing else.
func checkExactlyOnce(t *testing.T, want map[string]string, got map[int32][]*kgo.Record) {
	t.Helper()
	seen := make(map[string]int, len(want))
	bad := 0
	total := 0
	for _, rs := range got {
		for _, r := range rs {
			total++
			var src string
			for _, h := range r.Headers {
				if h.Key == srcHeader {
					src = string(h.Value)
				}
			}
			seen[src]++
			if w, ok := want[src]; (!ok || w != string(r.Value)) && bad < 5 {
				bad++
				t.Errorf("output %d/%d: src %q value %q, want a known input (value %q)", r.Partition, r.Offset, src, r.Value, w)
			}
		}
	}
	missing, dup := 0, 0
	for src := range want {
		switch c := seen[src]; {
		case c == 0:
			if missing < 5 {
				t.Errorf("input %s is missing from the committed output", src)
			}
			missing++
		case c > 1:
			if dup < 5 {
				t.Errorf("input %s appears %d times in the committed output", src, c)
			}
			dup++
		}
	}
	if missing > 0 || dup > 0 || total != len(want) {
		t.Errorf("committed output: %d records for %d inputs, %d inputs missing, %d duplicated", total, len(want), missing, dup)
	}
}

// ctpConfig is one consume-transform-produce run.
type ctpConfig struct {
	addr    string
	group   string
	in, out string
}

// ctpProgress counts input records whose transaction committed, over all sessions.
type ctpProgress struct {
	committed atomic.Int64
	txns      atomic.Int64
	aborts    atomic.Int64
	restarts  atomic.Int64
	// abandoned is set by the one session that abandons its transaction
	// once abandon closes (whichever still has input to work on).
	abandoned atomic.Bool
}

// runCTPSession runs one GroupTransactSession with transactional id txnID until stop
// is closed or an error ends it. If abandon is closed, the next batch is produced and
// flushed but its transaction is not ended, and the client is closed.
func runCTPSession(t *testing.T, c ctpConfig, txnID string, logOpt kgo.Opt, progress *ctpProgress, stop, abandon <-chan struct{}) error {
	s, err := kgo.NewGroupTransactSession(
		logOpt,
		kgo.SeedBrokers(c.addr),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(15*time.Second),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("NewGroupTransactSession(%s): %w", txnID, err)
	}
	defer s.Close()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		pctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := s.PollRecords(pctx, 50)
		cancel()
		if fs.IsClientClosed() {
			return nil
		}
		fs.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("%s: fetch %s/%d: %v", txnID, tp, p, err)
			}
		})
		if fs.NumRecords() == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return fmt.Errorf("%s Begin: %w", txnID, err)
		}
		var outs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			outs = append(outs, &kgo.Record{
				Topic: c.out, Partition: r.Partition, Key: r.Key,
				Value:   append([]byte("out:"), r.Value...),
				Headers: []kgo.RecordHeader{{Key: srcHeader, Value: fmt.Appendf(nil, "%s/%d/%d", r.Topic, r.Partition, r.Offset)}},
			})
		})
		ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		perr := s.ProduceSync(ectx, outs...).FirstErr()
		select {
		case <-abandon:
			if progress.abandoned.CompareAndSwap(false, true) {
				cancel()
				return errCTPAbandoned // deferred Close; the transaction stays open on the broker
			}
		default:
		}
		commit := kgo.TryCommit
		if perr != nil {
			t.Logf("%s: produce failed, aborting: %v", txnID, perr)
			commit = kgo.TryAbort
		}
		committed, err := s.End(ectx, commit)
		cancel()
		if err != nil {
			return fmt.Errorf("%s End: %w", txnID, err)
		}
		if committed {
			progress.committed.Add(int64(len(outs)))
			progress.txns.Add(1)
		} else {
			progress.aborts.Add(1)
		}
	}
}

// superviseCTP keeps a session with transactional id txnID running until stop closes,
// starting a new one (the same id: it fences the old producer) whenever one ends.
func superviseCTP(t *testing.T, c ctpConfig, txnID string, progress *ctpProgress, stop, abandon <-chan struct{}) {
	logOpt := txnLogger(t, txnID)
	for {
		err := runCTPSession(t, c, txnID, logOpt, progress, stop, abandon)
		select {
		case <-stop:
			return
		default:
		}
		if errors.Is(err, errCTPAbandoned) {
			t.Logf("%s abandoned with its transaction open; starting a new session with the same transactional id", txnID)
			abandon = nil
		} else {
			t.Logf("%s ended (%v); starting a new session with the same transactional id", txnID, err)
		}
		progress.restarts.Add(1)
	}
}

// waitGroupConsumed polls until the group's committed offsets reach the end of every
// partition of topic.
func waitGroupConsumed(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, progress *ctpProgress) {
	t.Helper()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	var last string
	for {
		ends, eerr := adm.ListEndOffsets(ctx, topic)
		offs, ferr := adm.FetchOffsets(ctx, group)
		if eerr == nil && ferr == nil {
			done := true
			last = ""
			ends.Each(func(o kadm.ListedOffset) {
				c, ok := offs.Lookup(topic, o.Partition)
				done = done && ok && c.Err == nil && c.At == o.Offset
				last += fmt.Sprintf(" %d:%d/%d", o.Partition, c.At, o.Offset)
			})
			if done {
				return
			}
		} else {
			last = fmt.Sprintf("errors %v / %v", eerr, ferr)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s did not commit to the end of %s: committed/end%s; %d records in %d committed transactions, %d aborted, %d restarts",
				group, topic, last, progress.committed.Load(), progress.txns.Load(), progress.aborts.Load(), progress.restarts.Load())
		case <-ticker.C:
		}
	}
}

// ctpDisruption is what happens once a third of the input is committed.
type ctpDisruption int

const (
	ctpAbandonSession ctpDisruption = iota
	ctpKillBroker
)

func runCTPScenario(t *testing.T, name string, disruption ctpDisruption) {
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 150*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const partitions, n = 3, 3000
	c := ctpConfig{addr: b.Addr, group: name + "-group", in: name + "-in", out: name + "-out"}
	createTopicKadm(t, ctx, adm, c.in, partitions, nil)
	createTopicKadm(t, ctx, adm, c.out, partitions, nil)
	want := produceCTPInput(t, ctx, b.Addr, c.in, partitions, n)

	var progress ctpProgress
	stop := make(chan struct{})
	abandon := make(chan struct{})
	var wg sync.WaitGroup
	// Both sessions watch abandon and the first to produce after it
	// closes abandons its transaction: a session that already ran out of
	// input by then cannot make the scenario miss its disruption.
	for i, ab := range []chan struct{}{abandon, abandon} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			superviseCTP(t, c, fmt.Sprintf("%s-txn-%d", name, i), &progress, stop, ab)
		}()
	}
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopAll()

	// Disrupt once a third of the input has committed.
	ticker := time.NewTicker(20 * time.Millisecond)
	for progress.committed.Load() < n/3 {
		select {
		case <-ctx.Done():
			t.Fatalf("only %d of %d records committed before the deadline", progress.committed.Load(), n)
		case <-ticker.C:
		}
	}
	ticker.Stop()
	switch disruption {
	case ctpAbandonSession:
		close(abandon)
	case ctpKillBroker:
		b.Kill(t)
		t.Logf("killed the broker with SIGKILL after %d committed records", progress.committed.Load())
		b.Restart(t)
		requireCleanStart(t, b)
	}

	waitGroupConsumed(t, ctx, adm, c.group, c.in, &progress)
	stopAll()
	t.Logf("%d records in %d committed transactions, %d aborted transactions, %d session restarts",
		progress.committed.Load(), progress.txns.Load(), progress.aborts.Load(), progress.restarts.Load())
	if disruption == ctpAbandonSession && progress.restarts.Load() == 0 {
		t.Errorf("the abandoned session was never replaced")
	}

	writeSentinels(t, ctx, b.Addr, c.out, partitions)
	checkExactlyOnce(t, want, readUntilSentinels(t, ctx, b.Addr, c.out, partitions, kgo.ReadCommitted()))
}

// TestTxnCTPFranzGoAbandonedSession: one of two sessions is abandoned mid-transaction
// and replaced by a session with the same transactional id.
func TestTxnCTPFranzGoAbandonedSession(t *testing.T) {
	t.Parallel()
	runCTPScenario(t, "ctp-abandon", ctpAbandonSession)
}

// TestTxnCTPFranzGoBrokerKill: the broker is killed with SIGKILL and restarted while
// both sessions run.
func TestTxnCTPFranzGoBrokerKill(t *testing.T) {
	t.Parallel()
	runCTPScenario(t, "ctp-kill", ctpKillBroker)
}
