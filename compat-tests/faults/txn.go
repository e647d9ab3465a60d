package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TxnOutcome is what the producer knows of a transaction's end.
type TxnOutcome int

// Outcomes. Unknown: EndTransaction (or anything before it) failed in a way
// that leaves the commit undecided; the transaction must then be all or
// nothing, never partial.
const (
	TxnCommitted TxnOutcome = iota
	TxnAborted
	TxnUnknown
)

// Txn is one transaction of the workload: Size records "t<Seq>-<i>".
type Txn struct {
	Seq     int
	Size    int
	Outcome TxnOutcome
	Err     string // why the outcome is not the one asked for
}

// TxnHistory is what the transaction workload saw.
type TxnHistory struct {
	Txns []Txn
	// Polls are the values a read_committed consumer received.
	Polls []string
	// Final is every value of a read_committed read of the whole topic
	// after the faults healed.
	Final []string
}

// TxnReport is what CheckTxn found.
type TxnReport struct {
	Committed, Aborted, Unknown int
	AbortedRead                 Anomaly  // a record of an aborted transaction read with read_committed
	Partial                     Anomaly  // some but not all records of a transaction visible
	LostCommitted               Anomaly  // a committed transaction with no record visible
	Duplicated                  Anomaly  // one record visible twice
	Errors                      []string // the first client errors (informative)
}

// Anomalies is the number of anomalies of every kind.
func (r *TxnReport) Anomalies() int {
	return r.AbortedRead.Count + r.Partial.Count + r.LostCommitted.Count + r.Duplicated.Count
}

func (r *TxnReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transactions committed=%d aborted=%d unknown=%d\n", r.Committed, r.Aborted, r.Unknown)
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  error: %s\n", e)
	}
	for _, a := range []struct {
		name string
		a    Anomaly
	}{{"aborted-read", r.AbortedRead}, {"partial", r.Partial}, {"lost-committed", r.LostCommitted}, {"duplicated", r.Duplicated}} {
		fmt.Fprintf(&b, "  %-16s %d", a.name, a.a.Count)
		for _, e := range a.a.Examples {
			fmt.Fprintf(&b, "\n    %s", e)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func txnSeqOf(v string) (int, bool) {
	rest, ok := strings.CutPrefix(v, "t")
	if !ok {
		return 0, false
	}
	s, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// CheckTxn checks a transaction history. Pure.
func CheckTxn(h *TxnHistory) *TxnReport {
	r := &TxnReport{}
	bySeq := make(map[int]Txn, len(h.Txns))
	for _, t := range h.Txns {
		bySeq[t.Seq] = t
		if t.Err != "" && len(r.Errors) < maxExamples {
			r.Errors = append(r.Errors, fmt.Sprintf("transaction %d: %s", t.Seq, t.Err))
		}
		switch t.Outcome {
		case TxnCommitted:
			r.Committed++
		case TxnAborted:
			r.Aborted++
		default:
			r.Unknown++
		}
	}
	for _, v := range h.Polls {
		if s, ok := txnSeqOf(v); ok && bySeq[s].Outcome == TxnAborted {
			r.AbortedRead.add("read_committed consumer read %q of aborted transaction %d", v, s)
		}
	}
	seen := make(map[string]bool)
	visible := make(map[int]int)
	for _, v := range h.Final {
		if seen[v] {
			r.Duplicated.add("%q visible twice", v)
			continue
		}
		seen[v] = true
		s, ok := txnSeqOf(v)
		if !ok {
			continue
		}
		visible[s]++
		if bySeq[s].Outcome == TxnAborted {
			r.AbortedRead.add("final read_committed read has %q of aborted transaction %d", v, s)
		}
	}
	for _, t := range h.Txns {
		n := visible[t.Seq]
		switch {
		case n > 0 && n < t.Size:
			r.Partial.add("transaction %d (outcome %d): %d of %d records visible", t.Seq, t.Outcome, n, t.Size)
		case n == 0 && t.Outcome == TxnCommitted:
			r.LostCommitted.add("committed transaction %d: no record visible", t.Seq)
		}
	}
	return r
}

// TxnOptions configures the transaction workload.
type TxnOptions struct {
	Topic         string
	Partitions    int32
	TransactionID string
	// Size is the number of records per transaction, spread round-robin
	// over the partitions; every AbortEvery-th transaction is aborted.
	Size, AbortEvery int
}

// TxnWorkload runs one transactional producer and one read_committed
// consumer.
type TxnWorkload struct {
	o     TxnOptions
	addrs []string

	mu   sync.Mutex
	hist TxnHistory

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartTxn starts the workload; Stop ends it.
func StartTxn(addrs []string, o TxnOptions) (*TxnWorkload, error) {
	w := &TxnWorkload{o: o, addrs: addrs}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: allAtStart(o.Partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		cancel()
		return nil, err
	}
	w.wg.Add(2)
	go w.produce(ctx)
	go func() {
		defer w.wg.Done()
		defer cons.Close()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			var vs []string
			fs.EachRecord(func(r *kgo.Record) { vs = append(vs, string(r.Value)) })
			w.mu.Lock()
			w.hist.Polls = append(w.hist.Polls, vs...)
			w.mu.Unlock()
		}
	}()
	return w, nil
}

func (w *TxnWorkload) newProducer() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(w.addrs...), kgo.DefaultProduceTopic(w.o.Topic),
		kgo.TransactionalID(w.o.TransactionID), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.RequestTimeoutOverhead(10*time.Second))
}

func (w *TxnWorkload) record(t Txn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist.Txns = append(w.hist.Txns, t)
}

// Committed is the number of transactions known committed so far.
func (w *TxnWorkload) Committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, t := range w.hist.Txns {
		if t.Outcome == TxnCommitted {
			n++
		}
	}
	return n
}

func (w *TxnWorkload) produce(ctx context.Context) {
	defer w.wg.Done()
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for seq := 0; ctx.Err() == nil; seq++ {
		if cl == nil {
			var err error
			if cl, err = w.newProducer(); err != nil {
				return
			}
		}
		outcome, err := w.one(cl, seq)
		t := Txn{Seq: seq, Size: w.o.Size, Outcome: outcome}
		ok := err == nil
		if err != nil {
			t.Err = err.Error()
		}
		w.record(t)
		if !ok {
			// The client may be in a fatal state: a new one fences it
			// with InitProducerID and aborts whatever it left open.
			cl.Close()
			cl = nil
			holdFor(ctx, 500*time.Millisecond)
		}
	}
}

// one runs transaction seq; an error means the client should be replaced.
func (w *TxnWorkload) one(cl *kgo.Client, seq int) (TxnOutcome, error) {
	// Not derived from ctx: a stop lets the transaction under way end.
	tctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return TxnAborted, fmt.Errorf("begin: %w", err) // nothing was produced in it
	}
	abort := w.o.AbortEvery > 0 && seq%w.o.AbortEvery == w.o.AbortEvery-1
	var recs []*kgo.Record
	for i := range w.o.Size {
		recs = append(recs, &kgo.Record{Partition: int32(i) % w.o.Partitions, Value: fmt.Appendf(nil, "t%d-%d", seq, i)})
	}
	produceErr := cl.ProduceSync(tctx, recs...).FirstErr()
	commit := kgo.TryCommit
	if abort || produceErr != nil {
		commit = kgo.TryAbort
	}
	err := cl.EndTransaction(tctx, commit)
	switch {
	case err == nil && commit == kgo.TryCommit:
		return TxnCommitted, nil
	case err == nil && produceErr != nil:
		return TxnAborted, fmt.Errorf("produce (aborted): %w", produceErr)
	case err == nil:
		return TxnAborted, nil
	default:
		return TxnUnknown, fmt.Errorf("end (produce error %v): %w", produceErr, err)
	}
}

// Stop ends the producer and consumer.
func (w *TxnWorkload) Stop() {
	w.cancel()
	w.wg.Wait()
}

// FinalRead reads the whole topic with read_committed from the start
// until no record has come for finalQuiet (the cluster is healed and the
// producer stopped, so the topic no longer grows), at most d.
func (w *TxnWorkload) FinalRead(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.o.Topic: allAtStart(w.o.Partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	var vals []string
	last := time.Now()
	for time.Since(last) < finalQuiet {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			return fmt.Errorf("%w: read_committed read still receiving records after %v", ErrFinalRead, d)
		}
		fs.EachRecord(func(r *kgo.Record) {
			vals = append(vals, string(r.Value))
			last = time.Now()
		})
	}
	w.mu.Lock()
	w.hist.Final = vals
	w.mu.Unlock()
	return nil
}

// finalQuiet is how long the final read_committed read waits for more.
const finalQuiet = 8 * time.Second

// History returns the recorded history.
func (w *TxnWorkload) History() *TxnHistory {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &w.hist
}
