package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transaction workload of a second client: confluent-kafka-go
// (librdkafka) transactional producers and a read_committed consumer, each
// in a child process (the test binary running TestConfluentTxnChild), so
// that librdkafka's transaction state machine (InitTransactions fencing,
// retried and abortable commit errors, the epoch bump after a timeout)
// meets the faults, and so that a producer can be killed in the middle of
// a transaction. Every transaction is Size records "t<seq>-<i>" spread
// round-robin over the partitions, seq unique over producers and their
// restarts; the producers report each transaction's start and outcome on
// stdout, the consumer every value it reads. A franz-go read_committed
// consumer reads beside it, and after the faults both clients read the
// whole topic with read_committed: CheckTxn judges each final read
// against the producers' outcomes (aborted records visible, partial
// transactions, committed ones lost, records visible twice).

// ErrConfluentTxn is returned when a confluent transactional child cannot
// be started or does not stop in time.
var ErrConfluentTxn = errors.New("faults: confluent transaction process")

// ctxnEnv carries a child's parameters: "role;addrs;topic;partitions;id;
// run;size;abort-every;interval" (role "producer" or "consumer").
const ctxnEnv = "SAMSA_FAULTS_CONFLUENT_TXN"

// ctxnPrefix starts every report line of a child:
//
//	CTX S seq          transaction seq begun (records may follow)
//	CTX C seq          committed
//	CTX A seq why      aborted (asked for, or after an abortable error)
//	CTX U seq error    outcome unknown (a fatal or unretriable error)
//	CTX E error        a client error outside a transaction (informative)
//	CTX V value        the consumer read value
const ctxnPrefix = "CTX "

// ctxnSeqBase spaces the sequence numbers of producers and runs: the
// transaction seq of producer id, run r, local number k is
// (id*ctxnRuns+r)*ctxnSeqBase + k.
const (
	ctxnSeqBase = 100_000
	ctxnRuns    = 100
)

// ctxnStopBound bounds how long a child gets after SIGTERM to end its
// transaction under way and exit.
const ctxnStopBound = 2 * time.Minute

// ConfluentTxnOptions configures the confluent transaction workload.
type ConfluentTxnOptions struct {
	Topic      string
	Partitions int32
	// Producers is the number of confluent-kafka-go transactional
	// producers, JavaProducers that of Java client ones (ids after them,
	// JavaClasspath needed); producer i (from 1) uses transactional.id
	// TxnID(i).
	Producers, JavaProducers int
	JavaClasspath            string
	// Size is the number of records per transaction; every AbortEvery-th
	// transaction of a producer is aborted on purpose.
	Size, AbortEvery int
	// Interval is the pause between one transaction's end and the next.
	Interval time.Duration
	Logf     func(format string, args ...any)
}

// TxnID is the transactional.id of producer id (1-based): "<topic>-txn-<id>".
func (o ConfluentTxnOptions) TxnID(id int) string { return ctxnTxnID(o.Topic, id) }

func ctxnTxnID(topic string, id int) string { return fmt.Sprintf("%s-txn-%d", topic, id) }

// ConfluentTxn runs the confluent transaction workload.
type ConfluentTxn struct {
	o     ConfluentTxnOptions
	addrs []string

	mu       sync.Mutex
	txns     map[int]*Txn
	polls    []string // values the live consumers read
	errs     []string
	prods    []*ctxnProc // current process of producer i+1
	runs     []int       // runs started of producer i+1
	consumer *ctxnProc
	kills    int

	franzCancel context.CancelFunc
	franzDone   chan struct{}
}

type ctxnProc struct {
	role string
	id   int
	cmd  *exec.Cmd
	done chan struct{}
	// values receives the values a consumer child reads (nil for
	// producers).
	values func(v string)
}

// StartConfluentTxn starts the producers, a confluent read_committed
// consumer and a franz-go one.
func StartConfluentTxn(addrs []string, o ConfluentTxnOptions) (*ConfluentTxn, error) {
	all := o.Producers + o.JavaProducers
	w := &ConfluentTxn{o: o, addrs: addrs, txns: make(map[int]*Txn), runs: make([]int, all),
		prods: make([]*ctxnProc, all)}
	for i := range all {
		if err := w.startProducer(i + 1); err != nil {
			w.Stop()
			return nil, err
		}
	}
	c, err := w.startChild("consumer", 0, 0, func(v string) {
		w.mu.Lock()
		w.polls = append(w.polls, v)
		w.mu.Unlock()
	})
	if err != nil {
		w.Stop()
		return nil, err
	}
	w.consumer = c
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: allAtStart(o.Partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		w.Stop()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.franzCancel, w.franzDone = cancel, make(chan struct{})
	go func() {
		defer close(w.franzDone)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			var vs []string
			fs.EachRecord(func(r *kgo.Record) { vs = append(vs, string(r.Value)) })
			w.mu.Lock()
			w.polls = append(w.polls, vs...)
			w.mu.Unlock()
		}
	}()
	return w, nil
}

func (w *ConfluentTxn) logf(format string, args ...any) {
	if w.o.Logf != nil {
		w.o.Logf(format, args...)
	}
}

func (w *ConfluentTxn) startProducer(id int) error {
	w.mu.Lock()
	run := w.runs[id-1]
	w.runs[id-1]++
	w.mu.Unlock()
	if run >= ctxnRuns {
		return fmt.Errorf("%w: producer %d restarted more than %d times", ErrConfluentTxn, id, ctxnRuns)
	}
	p, err := w.startChild("producer", id, run, nil)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.prods[id-1] = p
	w.mu.Unlock()
	return nil
}

func (w *ConfluentTxn) startChild(role string, id, run int, values func(string)) (*ctxnProc, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestConfluentTxnChild$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%s;%d;%d;%d;%d;%d;%s", ctxnEnv, role,
		strings.Join(w.addrs, ","), w.o.Topic, w.o.Partitions, id, run, w.o.Size, w.o.AbortEvery, w.o.Interval))
	if role == "producer" && id > w.o.Producers {
		role = "java producer"
		cmd = exec.Command("java", "-cp", w.o.JavaClasspath, javaTxnClass, strings.Join(w.addrs, ","), w.o.Topic,
			strconv.Itoa(int(w.o.Partitions)), strconv.Itoa(id), strconv.Itoa(run), strconv.Itoa(w.o.Size),
			strconv.Itoa(w.o.AbortEvery), strconv.FormatInt(w.o.Interval.Milliseconds(), 10))
	}
	cmd.Stderr = io.Discard
	// SAMSA_FAULTS_KEEP_LOGS keeps each child's stderr there (the Java
	// client logs at INFO).
	var logFile *os.File
	if dir := os.Getenv("SAMSA_FAULTS_KEEP_LOGS"); dir != "" {
		name := fmt.Sprintf("ctxn-%s-%d-%d-%d.log", strings.ReplaceAll(role, " ", "-"), id, run, time.Now().UnixNano())
		if f, err := os.Create(filepath.Join(dir, name)); err == nil {
			logFile, cmd.Stderr = f, f
		}
	}
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = childproc.Start(cmd)
	}
	if logFile != nil {
		logFile.Close() // the child has its own descriptor
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfluentTxn, err)
	}
	p := &ctxnProc{role: role, id: id, cmd: cmd, done: make(chan struct{}), values: values}
	go w.read(p, out)
	return p, nil
}

// read parses a child's reports until its stdout closes, then reaps it.
func (w *ConfluentTxn) read(p *ctxnProc, out io.Reader) {
	defer close(p.done)
	scanLines(out, func(line string) { w.report(p, line) })
	_ = p.cmd.Wait()
}

// scanLines calls f with each line of a child's stdout (up to 1 MiB a
// line) until it closes.
func scanLines(out io.Reader, f func(string)) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f(sc.Text())
	}
}

// report records one line of child p's stdout (lines without ctxnPrefix
// are the test framework's: ignored).
func (w *ConfluentTxn) report(p *ctxnProc, text string) {
	line, ok := strings.CutPrefix(text, ctxnPrefix)
	if !ok {
		return
	}
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "V":
		if p.values != nil {
			p.values(rest)
		}
		return
	case "E":
		w.noteErr(fmt.Sprintf("%s %d: %s", p.role, p.id, rest))
		return
	case "S", "C", "A", "U":
	default:
		return
	}
	s, why, _ := strings.Cut(rest, " ")
	seq, err := strconv.Atoi(s)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.txns[seq]
	if t == nil {
		t = &Txn{Seq: seq, Size: w.o.Size, Outcome: TxnUnknown, Err: "no outcome reported (producer process killed)"}
		w.txns[seq] = t
	}
	switch kind {
	case "C":
		t.Outcome, t.Err = TxnCommitted, ""
	case "A":
		t.Outcome, t.Err = TxnAborted, why
		if why == "asked" {
			t.Err = ""
		}
	case "U":
		t.Outcome, t.Err = TxnUnknown, why
	}
}

func (w *ConfluentTxn) noteErr(e string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 20 {
		w.errs = append(w.errs, e)
	}
}

// Producers is the number of producers of both clients.
func (w *ConfluentTxn) Producers() int { return w.o.Producers + w.o.JavaProducers }

// KillProducer SIGKILLs producer id (1-based), most likely in the middle
// of a transaction, and starts it again: the new process's
// InitTransactions must fence the old one and end what it left open.
func (w *ConfluentTxn) KillProducer(id int) error {
	w.mu.Lock()
	p := w.prods[id-1]
	w.kills++
	w.mu.Unlock()
	if p != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	w.logf("confluent txn: SIGKILL producer %d (transactional.id %s); restarting it", id, w.o.TxnID(id))
	return w.startProducer(id)
}

// Kills is the number of producer processes killed.
func (w *ConfluentTxn) Kills() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kills
}

// Counts returns the transactions known committed, and all begun.
func (w *ConfluentTxn) Counts() (committed, begun int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.txns {
		if t.Outcome == TxnCommitted {
			committed++
		}
	}
	return committed, len(w.txns)
}

// CommittedBy returns the transactions known committed by each producer
// id (1-based), over its restarts.
func (w *ConfluentTxn) CommittedBy() map[int]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[int]int)
	for _, t := range w.txns {
		if t.Outcome == TxnCommitted {
			out[t.Seq/(ctxnRuns*ctxnSeqBase)]++
		}
	}
	return out
}

// Errors returns the first client errors the children reported.
func (w *ConfluentTxn) Errors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.errs)
}

// stopProcs SIGTERMs the processes and waits, bounded, killing the late
// ones.
func stopProcs(procs []*ctxnProc) error {
	children := make([]childToStop, len(procs))
	for i, p := range procs {
		children[i] = childToStop{cmd: p.cmd, done: p.done, name: fmt.Sprintf("%s %d", p.role, p.id)}
	}
	return termChildren(children, ctxnStopBound, ErrConfluentTxn)
}

// StopProducers lets every producer end its transaction under way and
// exit.
func (w *ConfluentTxn) StopProducers() error {
	w.mu.Lock()
	var procs []*ctxnProc
	for _, p := range w.prods {
		if p != nil {
			procs = append(procs, p)
		}
	}
	w.prods = make([]*ctxnProc, len(w.prods))
	w.mu.Unlock()
	return stopProcs(procs)
}

// Stop ends the producers and the live consumers.
func (w *ConfluentTxn) Stop() error {
	err := w.StopProducers()
	if w.consumer != nil {
		err = errors.Join(err, stopProcs([]*ctxnProc{w.consumer}))
		w.consumer = nil
	}
	if w.franzCancel != nil {
		w.franzCancel()
		<-w.franzDone
		w.franzCancel = nil
	}
	return err
}

// ConfluentFinal is the final read of both clients.
type ConfluentFinal struct {
	Confluent, Franz []string
}

// finalReader collects one final read's values and says when it is done.
type finalReader struct {
	mu    sync.Mutex
	begun time.Time
	last  time.Time
	vals  []string
}

func (r *finalReader) add(vs ...string) {
	if len(vs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vals = append(r.vals, vs...)
	r.last = time.Now()
}

// done: every committed record (want) read and nothing more for
// finalSettle, or nothing for finalQuiet after a first value (or since
// the start when nothing was committed). The wait does not start before
// the reader got something, however slow a child's start.
func (r *finalReader) done(want int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		return want == 0 && time.Since(r.begun) >= finalQuiet
	}
	quiet := time.Since(r.last)
	return (len(r.vals) >= want && quiet >= finalSettle) || quiet >= finalQuiet
}

func (r *finalReader) values() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vals)
}

// finalSettle is how long a final read goes on after it has as many
// values as the committed transactions hold, for duplicates or aborted
// records beyond them.
const finalSettle = 3 * time.Second

// FinalRead reads the whole topic with read_committed from the start with
// a fresh confluent consumer and a fresh franz-go one at once (the
// producers are stopped: every outcome is known), each until it has
// every committed record and nothing more came for finalSettle, or
// nothing came for finalQuiet; at most d.
func (w *ConfluentTxn) FinalRead(ctx context.Context, d time.Duration) (*ConfluentFinal, error) {
	want := 0
	for _, t := range w.History(nil).Txns {
		if t.Outcome == TxnCommitted {
			want += t.Size
		}
	}
	w.waitStable(ctx)
	now := time.Now()
	conf, franz := &finalReader{begun: now}, &finalReader{begun: now}
	p, err := w.startChild("consumer", 0, 0, func(v string) { conf.add(v) })
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.o.Topic: allAtStart(w.o.Partitions)}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		_ = stopProcs([]*ctxnProc{p})
		return nil, err
	}
	franzErr := make(chan error, 1)
	go func() {
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		for !franz.done(want) {
			pctx, pcancel := context.WithTimeout(rctx, time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			if rctx.Err() != nil {
				franzErr <- fmt.Errorf("%w: franz-go read_committed read not done after %v", ErrFinalRead, d)
				return
			}
			var vs []string
			fs.EachRecord(func(r *kgo.Record) { vs = append(vs, string(r.Value)) })
			franz.add(vs...)
		}
		franzErr <- nil
	}()
	cerr := pollUntil(ctx, d, func(context.Context) (bool, error) { return conf.done(want), nil })
	if cerr != nil {
		cerr = fmt.Errorf("%w: confluent read_committed read: %w", ErrFinalRead, cerr)
	}
	cerr = errors.Join(cerr, stopProcs([]*ctxnProc{p}), <-franzErr)
	return &ConfluentFinal{Confluent: conf.values(), Franz: franz.values()}, cerr
}

// stableBound bounds how long the final read waits for no transaction to
// be open: longer than the producers' transaction.timeout.ms (30 s), after
// which the coordinator aborts what a producer left open.
const stableBound = 90 * time.Second

// waitStable waits (bounded) until every partition's last stable offset
// is its high watermark: no transaction is open, so a read_committed
// read sees everything. A producer replaced just before its stop could
// leave one open until the coordinator times it out; a read before then
// would miss the committed records behind it and report them lost.
func (w *ConfluentTxn) waitStable(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.addrs...))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var state string
	err = pollUntil(ctx, stableBound, func(ctx context.Context) (bool, error) {
		stable, err1 := adm.ListCommittedOffsets(ctx, w.o.Topic)
		ends, err2 := adm.ListEndOffsets(ctx, w.o.Topic)
		if err := errors.Join(err1, err2, stable.Error(), ends.Error()); err != nil {
			state = err.Error()
			return false, nil
		}
		ok := true
		state = ""
		ends.Each(func(e kadm.ListedOffset) {
			if s, found := stable.Lookup(e.Topic, e.Partition); !found || s.Offset != e.Offset {
				ok = false
				state += fmt.Sprintf(" p%d: stable %d, end %d", e.Partition, s.Offset, e.Offset)
			}
		})
		return ok, nil
	})
	if err != nil {
		w.logf("confluent txn: a transaction still open after %v (%s); reading anyway", stableBound, state)
	}
}

// History returns the transactions in seq order, the live consumers'
// values and the given final read.
func (w *ConfluentTxn) History(final []string) *TxnHistory {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := &TxnHistory{Polls: slices.Clone(w.polls), Final: final}
	for _, t := range w.txns {
		h.Txns = append(h.Txns, *t)
	}
	slices.SortFunc(h.Txns, func(a, b Txn) int { return a.Seq - b.Seq })
	return h
}
