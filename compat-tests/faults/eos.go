package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EOSHistory is what the consume-transform-produce workload saw.
type EOSHistory struct {
	// Acked and Failed are the input records (values) the input producer
	// had acknowledged, and those whose outcome it does not know.
	Acked, Failed []string
	// Output is every value of a read_committed read of the whole output
	// topic after the faults healed.
	Output []string
	// Committed, Aborted and Unknown count the transforming transactions
	// by outcome (Unknown: End failed), Sessions the members' sessions
	// (more than one a member: replaced after a failure) (informative).
	Committed, Aborted, Unknown, Sessions int
	// Errors summarizes the members' client errors (ErrorLog.Summary).
	Errors []string
}

// EOSReport is what CheckEOS found.
type EOSReport struct {
	Inputs, Outputs, Committed, Aborted, Unknown, Sessions int
	Errors                                                 []string // informative
	// Lost: an acknowledged input with no output. Duplicated: one input's
	// output visible twice (an aborted or a replayed transaction's copy).
	// Foreign: an output of no input the producer ever sent.
	Lost, Duplicated, Foreign Anomaly
}

// Anomalies is the number of anomalies of every kind.
func (r *EOSReport) Anomalies() int { return r.Lost.Count + r.Duplicated.Count + r.Foreign.Count }

func (r *EOSReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "consume-transform-produce: inputs acked=%d outputs=%d transactions committed=%d aborted=%d unknown=%d sessions=%d\n",
		r.Inputs, r.Outputs, r.Committed, r.Aborted, r.Unknown, r.Sessions)
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  error: %s\n", e)
	}
	for _, a := range []struct {
		name string
		a    Anomaly
	}{{"lost", r.Lost}, {"duplicated", r.Duplicated}, {"foreign", r.Foreign}} {
		fmt.Fprintf(&b, "  %-12s %d", a.name, a.a.Count)
		for _, e := range a.a.Examples {
			fmt.Fprintf(&b, "\n    %s", e)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// eosOutput is the output value the transform makes of input value v.
func eosOutput(v string) string { return "out:" + v }

// CheckEOS checks that every acknowledged input appears exactly once in
// the output, an unknown-outcome input at most once, and nothing else.
// Pure.
func CheckEOS(h *EOSHistory) *EOSReport {
	r := &EOSReport{Inputs: len(h.Acked), Outputs: len(h.Output), Committed: h.Committed, Aborted: h.Aborted,
		Unknown: h.Unknown, Sessions: h.Sessions, Errors: h.Errors}
	sent := make(map[string]bool, len(h.Acked)+len(h.Failed))
	for _, v := range h.Acked {
		sent[eosOutput(v)] = true
	}
	for _, v := range h.Failed {
		sent[eosOutput(v)] = true
	}
	seen := make(map[string]int, len(h.Output))
	for _, v := range h.Output {
		seen[v]++
		switch {
		case !sent[v]:
			r.Foreign.add("output %q of no input", v)
		case seen[v] == 2:
			r.Duplicated.add("output %q visible more than once", v)
		}
	}
	for _, v := range h.Acked {
		if seen[eosOutput(v)] == 0 {
			r.Lost.add("input %q acknowledged, no output", v)
		}
	}
	return r
}

// EOSOptions configures the consume-transform-produce workload.
type EOSOptions struct {
	Input, Output string
	Partitions    int32
	Group         string
	// Workers is the number of transforming members of Group, each with
	// its own transactional id.
	Workers  int
	Interval time.Duration
	// Logf, if set, gets the first errors of each kind as they happen and
	// the members' assignment changes.
	Logf func(format string, args ...any)
	// ClientLogDir, if set, gets each member's franz-go log (info level)
	// as eos-member-<N>.log.
	ClientLogDir string
	// ClientLogDebug logs at debug level there (every request).
	ClientLogDebug bool
	// ConfluentMembers and JavaMembers are members of other clients in
	// Group beside the Workers (child processes, eos_child.go; Java needs
	// JavaClasspath); with any, every member uses the range assignor.
	ConfluentMembers, JavaMembers int
	JavaClasspath                 string
}

// EOSWorkload runs an idempotent input producer and Workers transforming
// members: each reads the input with read_committed in one consumer
// group and, in one transaction per poll, produces the transformed
// records to the output and commits its input offsets with
// SendOffsetsToTransaction (franz-go's GroupTransactSession). A member
// whose session fails (Begin or End returns an error: fenced, timed out,
// or stuck) closes it and opens a new one with the same transactional id,
// as a real application does; every client error goes to an ErrorLog.
type EOSWorkload struct {
	o     EOSOptions
	addrs []string
	start time.Time
	errs  *ErrorLog

	mu       sync.Mutex
	hist     EOSHistory
	members  []*eosMember
	children []*eosChild // members of other clients

	childrenWG sync.WaitGroup

	stopInput, stopWorkers context.CancelFunc
	inputWG, workersWG     sync.WaitGroup
	outputs                atomic.Int64
	stopOnce               sync.Once
	childStopErr           error
}

// StartEOS starts the workload; topics must exist. Stop ends it.
func StartEOS(addrs []string, o EOSOptions) (*EOSWorkload, error) {
	w := &EOSWorkload{o: o, addrs: addrs, start: time.Now()}
	w.errs = NewErrorLog(w.start, o.Logf)
	// Round robin: franz-go's default sticky partitioner puts thousands
	// of these small records in a row on one partition, so only the
	// member holding it had work and the other idled for most of a run.
	in, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(o.Input),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		return nil, err
	}
	for i := range o.Workers {
		w.members = append(w.members, &eosMember{name: fmt.Sprintf("member %d", i),
			txnID: fmt.Sprintf("%s-worker-%d", o.Group, i), backoff: eosBackoffFirst})
	}
	ictx, icancel := context.WithCancel(context.Background())
	wctx, wcancel := context.WithCancel(context.Background())
	w.stopInput, w.stopWorkers = icancel, wcancel
	w.inputWG.Add(1)
	go w.produceInput(ictx, in)
	for _, m := range w.members {
		w.workersWG.Add(1)
		go w.runMember(wctx, m)
	}
	if err := w.startChildren(); err != nil {
		w.Stop(context.Background(), 0)
		return nil, err
	}
	return w, nil
}

func (w *EOSWorkload) produceInput(ctx context.Context, cl *kgo.Client) {
	defer w.inputWG.Done()
	defer cl.Close()
	tick := time.NewTicker(w.o.Interval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			_ = cl.Flush(fctx)
			cancel()
			return
		case <-tick.C:
		}
		if cl.BufferedProduceRecords() >= maxBuffered {
			seq--
			continue
		}
		cl.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "e%d", seq)}, func(r *kgo.Record, err error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if err != nil {
				w.hist.Failed = append(w.hist.Failed, string(r.Value))
			} else {
				w.hist.Acked = append(w.hist.Acked, string(r.Value))
			}
		})
	}
}

// Inputs is the number of acknowledged input records so far.
func (w *EOSWorkload) Inputs() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.hist.Acked)
}

// Outputs is the number of records in committed transforming
// transactions so far (replays after a rebalance count again).
func (w *EOSWorkload) Outputs() int64 { return w.outputs.Load() }

// Stop stops the input producer, lets the workers drain the input until
// their committed outputs cover every acknowledged input (bounded by
// drain), then stops them.
// The drain also ends once the group's committed input offsets reach the
// input's end on every partition: a transaction whose End failed may have
// committed outputs Outputs does not count. Later calls do nothing.
func (w *EOSWorkload) Stop(ctx context.Context, drain time.Duration) {
	w.stopOnce.Do(func() {
		w.stopInput()
		w.inputWG.Wait()
		n := w.Inputs()
		adm, err := kgo.NewClient(kgo.SeedBrokers(w.addrs...))
		if err == nil {
			defer adm.Close()
		}
		_ = pollUntil(ctx, drain, func(pctx context.Context) (bool, error) {
			if w.Outputs() >= int64(n) {
				return true, nil
			}
			if adm == nil {
				return false, err
			}
			return groupCaughtUp(pctx, kadm.NewClient(adm), w.o.Group, w.o.Input)
		})
		w.stopWorkers()
		w.workersWG.Wait()
		w.childStopErr = w.stopChildren()
	})
}

// StopErr is the error of stopping the members of other clients (one
// that did not exit in time), after Stop.
func (w *EOSWorkload) StopErr() error { return w.childStopErr }

// groupCaughtUp reports whether group's committed offsets (committed
// transactions only: no require_stable) have reached the end of every
// partition of topic.
func groupCaughtUp(ctx context.Context, adm *kadm.Client, group, topic string) (bool, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false, err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return false, err
	}
	caughtUp := len(ends[topic]) > 0
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(o.Topic, o.Partition)
		if o.Err != nil || !ok || c.Err != nil || c.At < o.Offset {
			caughtUp = false
		}
	})
	return caughtUp, nil
}

// FinalRead reads the whole output topic with read_committed until no
// record has come for finalQuiet, at most d.
func (w *EOSWorkload) FinalRead(ctx context.Context, d time.Duration) error {
	vals, err := readCommittedAll(ctx, w.addrs, w.o.Output, w.o.Partitions, d)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.hist.Output = vals
	w.mu.Unlock()
	return nil
}

// History returns the recorded history.
func (w *EOSWorkload) History() *EOSHistory {
	errs := w.errs.Summary()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist.Errors = errs
	w.hist.Sessions = 0
	for _, m := range w.members {
		w.hist.Sessions += m.sessions
	}
	w.hist.Sessions += w.childSessionsLocked()
	return &w.hist
}

// readCommittedAll reads every partition of topic from the start with
// read_committed until no record has come for finalQuiet, at most d.
func readCommittedAll(ctx context.Context, addrs []string, topic string, partitions int32, d time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: allAtStart(partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var vals []string
	last := time.Now()
	for time.Since(last) < finalQuiet {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: read_committed read of %s still receiving records after %v", ErrFinalRead, topic, d)
		}
		fs.EachRecord(func(r *kgo.Record) {
			vals = append(vals, string(r.Value))
			last = time.Now()
		})
	}
	return vals, nil
}
