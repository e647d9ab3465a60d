package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrEOSGaveUp is recorded when a consume-transform-produce member has
// replaced its session maxEOSSessions times and stops.
var ErrEOSGaveUp = errors.New("faults: consume-transform-produce member gave up")

// Bounds of a member's recovery: how many sessions it may open in all,
// and the pause before opening the next one (doubling from the first to
// the last bound, back to the first after a commit).
const (
	maxEOSSessions   = 25
	eosBackoffFirst  = 250 * time.Millisecond
	eosBackoffLast   = 4 * time.Second
	eosTxnTimeout    = 20 * time.Second
	eosCallTimeout   = 30 * time.Second // one ProduceSync, one End
	eosLeaveTimeout  = 15 * time.Second // leaving the group when a session is replaced
	errLogPerKind    = 3                // errors of one kind written to the test log
	maxAssignLogs    = 40               // assignment changes a member writes to the test log
	maxErrorKinds    = 40               // kinds kept in the summary
	errMessageLength = 160
	wallClock        = "15:04:05.000" // UTC, as the nodes' logs
)

// ErrorLog is a bounded record of client errors: it counts every error
// by kind (who, what call, and the Kafka error name or the message), writes
// the first few of each kind to logf with the time since the workload
// started, and keeps the first maxErrorKinds kinds for the summary.
type ErrorLog struct {
	start time.Time
	logf  func(format string, args ...any)

	mu      sync.Mutex
	kinds   []*errorKind
	byKey   map[string]*errorKind
	dropped int // errors of kinds past maxErrorKinds
}

type errorKind struct {
	key         string
	count       int
	first, last time.Duration
	example     string
}

// NewErrorLog returns an empty log; logf may be nil.
func NewErrorLog(start time.Time, logf func(format string, args ...any)) *ErrorLog {
	return &ErrorLog{start: start, logf: logf, byKey: make(map[string]*errorKind)}
}

// errClass names an error by its Kafka error code when it carries one,
// else by its message (bounded).
func errClass(err error) string {
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke.Message
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "context canceled"
	}
	msg := err.Error()
	if len(msg) > errMessageLength {
		msg = msg[:errMessageLength] + "..."
	}
	return msg
}

// Add records err of call op made by who.
func (l *ErrorLog) Add(who, op string, err error) {
	at := time.Since(l.start)
	key := fmt.Sprintf("%s %s: %s", who, op, errClass(err))
	l.mu.Lock()
	k := l.byKey[key]
	if k == nil {
		if len(l.kinds) >= maxErrorKinds {
			l.dropped++
			l.mu.Unlock()
			return
		}
		msg := err.Error()
		if len(msg) > 2*errMessageLength {
			msg = msg[:2*errMessageLength] + "..."
		}
		k = &errorKind{key: key, first: at, example: msg}
		l.kinds = append(l.kinds, k)
		l.byKey[key] = k
	}
	k.count++
	k.last = at
	n := k.count
	l.mu.Unlock()
	if l.logf != nil && n <= errLogPerKind {
		l.logf("faults: +%.1fs (%s) %s %s error (%d of this kind): %v", at.Seconds(), time.Now().UTC().Format(wallClock), who, op, n, err)
	}
}

// Count is the number of errors recorded.
func (l *ErrorLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.dropped
	for _, k := range l.kinds {
		n += k.count
	}
	return n
}

// Summary is one line per kind of error, in the order they first came.
func (l *ErrorLog) Summary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, k := range l.kinds {
		out = append(out, fmt.Sprintf("%s: %d (first at +%.1fs, last at +%.1fs; e.g. %s)",
			k.key, k.count, k.first.Seconds(), k.last.Seconds(), k.example))
	}
	if l.dropped > 0 {
		out = append(out, fmt.Sprintf("%d more errors of other kinds", l.dropped))
	}
	return out
}

// fencedOrFatal says whether err leaves a transactional producer unable to
// go on (fenced by a newer epoch, its transaction aborted by the
// coordinator's timeout, or its producer id lost): a real application
// closes such a producer and starts a new one with the same transactional
// id, as Kafka Streams does. The member replaces its session after every
// Begin or End error anyway (franz-go: "No returned error is retryable");
// this only names the reason in the log.
func fencedOrFatal(err error) bool {
	for _, e := range []*kerr.Error{kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping,
		kerr.InvalidTxnState, kerr.TransactionalIDAuthorizationFailed, kerr.UnknownProducerID, kerr.TransactionAbortable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// eosMember is one transforming member: its transactional id, its
// current session (nil between a failure and the next session) and its
// counts.
type eosMember struct {
	name, txnID string
	s           *kgo.GroupTransactSession
	backoff     time.Duration
	clientLog   *os.File // franz-go's log of every session, when EOSOptions.ClientLogDir is set

	assignLogs atomic.Int32

	// Guarded by EOSWorkload.mu.
	sessions, committed, aborted, unknown int
	lastCommit                            time.Duration
}

// newSession opens a GroupTransactSession for m's transactional id: its
// InitProducerID fences the session it replaces and aborts what that one
// left open.
func (w *EOSWorkload) newSession(m *eosMember) (*kgo.GroupTransactSession, error) {
	o := w.o
	opts := []kgo.Opt{kgo.SeedBrokers(w.addrs...),
		kgo.TransactionalID(m.txnID), kgo.TransactionTimeout(eosTxnTimeout),
		kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second), kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.DefaultProduceTopic(o.Output), kgo.RecordDeliveryTimeout(eosCallTimeout),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { w.logAssign(m, "assigned", p) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { w.logAssign(m, "revoked", p) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { w.logAssign(m, "lost", p) }),
	}
	if o.ConfluentMembers+o.JavaMembers > 0 {
		// A classic group needs a protocol every member supports: the
		// other clients' members use range too.
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
	}
	if m.clientLog != nil {
		level := kgo.LogLevelInfo
		if w.o.ClientLogDebug {
			level = kgo.LogLevelDebug
		}
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(m.clientLog, level, func() string {
			return time.Now().UTC().Format(wallClock) + " "
		})))
	}
	return kgo.NewGroupTransactSession(opts...)
}

// logAssign writes a member's assignment change to the test log (the
// first maxAssignLogs of them): a member that never commits shows whether
// it held partitions.
func (w *EOSWorkload) logAssign(m *eosMember, what string, p map[string][]int32) {
	if w.o.Logf == nil || len(p) == 0 || m.assignLogs.Add(1) > maxAssignLogs {
		return
	}
	w.o.Logf("faults: +%.1fs (%s) %s %s %v", time.Since(w.start).Seconds(), time.Now().UTC().Format(wallClock), m.name, what, p)
}

// closeSession leaves the group (bounded) and closes the client. An open
// transaction is left to the next session's InitProducerID (or the
// coordinator's timeout) to abort.
func closeSession(s *kgo.GroupTransactSession) {
	lctx, cancel := context.WithTimeout(context.Background(), eosLeaveTimeout)
	_ = s.Client().LeaveGroupContext(lctx)
	cancel()
	s.Close()
}

// runMember is one member's loop: open a session when it has none (after
// a pause that grows with consecutive failures, at most maxEOSSessions in
// all), transform one poll, and replace the session when the poll's
// transaction left it unusable.
func (w *EOSWorkload) runMember(ctx context.Context, m *eosMember) {
	defer w.workersWG.Done()
	defer func() {
		if m.s != nil {
			closeSession(m.s)
		}
		if m.clientLog != nil {
			_ = m.clientLog.Close()
		}
	}()
	if d := w.o.ClientLogDir; d != "" {
		f, err := os.Create(filepath.Join(d, fmt.Sprintf("eos-%s.log", strings.ReplaceAll(m.name, " ", "-"))))
		if err != nil {
			w.errs.Add(m.name, "client log", err)
		} else {
			m.clientLog = f
		}
	}
	for ctx.Err() == nil {
		if m.s == nil {
			w.mu.Lock()
			n := m.sessions
			w.mu.Unlock()
			if n >= maxEOSSessions {
				w.errs.Add(m.name, "session", fmt.Errorf("%w after %d sessions", ErrEOSGaveUp, n))
				return
			}
			if n > 0 {
				holdFor(ctx, m.backoff)
				m.backoff = min(2*m.backoff, eosBackoffLast)
				if ctx.Err() != nil {
					return
				}
			}
			s, err := w.newSession(m)
			w.mu.Lock()
			m.sessions++
			w.mu.Unlock()
			if err != nil {
				w.errs.Add(m.name, "new session", err)
				continue
			}
			m.s = s
		}
		if !w.transformOnce(ctx, m) {
			closeSession(m.s)
			m.s = nil
		}
	}
}

// transformOnce polls once and, if records came, transforms them in one
// transaction: begin, produce the outputs, end (commit, or abort when a
// produce failed; End commits the input offsets within the transaction
// unless the group rebalanced). It reports false when the session must be
// replaced: Begin or End failed. A failed End leaves the outcome unknown
// (counted apart) and, if it failed before its EndTxn, the client still
// inside the transaction, where every later Begin fails ("already in a
// transaction"): the stall of finding 13 had that shape.
func (w *EOSWorkload) transformOnce(ctx context.Context, m *eosMember) bool {
	fs := m.s.PollFetches(ctx)
	if ctx.Err() != nil {
		return true
	}
	fs.EachError(func(topic string, p int32, err error) {
		w.errs.Add(m.name, "poll", fmt.Errorf("%s[%d]: %w", topic, p, err))
	})
	if fs.Empty() {
		return true
	}
	if err := m.s.Begin(); err != nil {
		w.errs.Add(m.name, "begin", err)
		return false
	}
	var outs []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) {
		outs = append(outs, &kgo.Record{Key: r.Key, Value: []byte(eosOutput(string(r.Value)))})
	})
	// Not derived from ctx: a stop lets the transaction under way end.
	pctx, pcancel := context.WithTimeout(context.Background(), eosCallTimeout)
	produceErr := m.s.ProduceSync(pctx, outs...).FirstErr()
	pcancel()
	try := kgo.TryCommit
	if produceErr != nil {
		w.errs.Add(m.name, "produce", produceErr)
		try = kgo.TryAbort
	}
	// End has a deadline of its own: a produce that used all of its time
	// must not leave the abort none.
	ectx, ecancel := context.WithTimeout(context.Background(), eosCallTimeout)
	committed, err := m.s.End(ectx, try)
	ecancel()
	at := time.Since(w.start)
	w.mu.Lock()
	switch {
	case err != nil:
		m.unknown++
		w.hist.Unknown++
	case committed:
		m.committed++
		m.lastCommit = at
		w.hist.Committed++
		w.outputs.Add(int64(len(outs)))
	default:
		m.aborted++
		w.hist.Aborted++
	}
	w.mu.Unlock()
	if err != nil {
		op := "end"
		if fencedOrFatal(err) {
			op = "end (fenced or fatal)"
		}
		w.errs.Add(m.name, op, err)
		return false
	}
	if committed {
		m.backoff = eosBackoffFirst
	}
	return true
}

// Progress is one line of each member's counts, for the step logs.
func (w *EOSWorkload) Progress() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for i, m := range w.members {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: sessions=%d committed=%d aborted=%d unknown=%d last-commit=+%.1fs",
			m.name, m.sessions, m.committed, m.aborted, m.unknown, m.lastCommit.Seconds())
	}
	w.childProgressLocked(&b)
	return b.String()
}
