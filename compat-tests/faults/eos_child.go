package faults

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// Consume-transform-produce members of other clients, each a child
// process in the EOSWorkload's group beside the franz-go members:
// confluent-kafka-go (librdkafka; the test binary running
// TestConfluentCTPChild) and the Java client (kafka-clients 4.4.0,
// compat-tests/java/src/main/java/samsa/compat/FaultsCtpMember.java).
// Each reads the input with isolation.level=read_committed and
// enable.auto.commit=false and, per poll, writes the transformed records
// (eosOutput) to the output in one transaction that also commits the
// input offsets with SendOffsetsToTransaction and the consumer's group
// metadata (KIP-447 fencing). After any failed or aborted transaction it
// closes both clients and opens new ones with the same transactional.id:
// the new consumer resumes from the group's committed offsets, and the
// new producer's InitTransactions fences the old one. Every member uses
// the range assignor (a classic group needs one protocol all members
// support). KillEOSChild SIGKILLs one in the middle of a transaction and
// starts it again; CheckEOS judges the output of all members together.

// ErrEOSChild is returned when a consume-transform-produce child cannot
// be started or does not stop in time.
var ErrEOSChild = errors.New("faults: consume-transform-produce child")

// ctpEnv carries a confluent child's parameters:
// "addrs;input;output;group;transactional.id;client.id".
const ctpEnv = "SAMSA_FAULTS_CTP"

// ctpPrefix starts every report line of a child:
//
//	CTP S            a session (consumer and producer) opened
//	CTP B n          a transaction of n output records begun
//	CTP C n          committed
//	CTP A n why      aborted (after an abortable error)
//	CTP U n why      outcome unknown (the session is replaced)
//	CTP E error      a client error outside a transaction (informative)
const ctpPrefix = "CTP "

// javaCTPClass is the Java client's member.
const javaCTPClass = "samsa.compat.FaultsCtpMember"

// Bounds of the children: the wait for a child to be inside a
// transaction before a kill, and for a child to end its transaction and
// exit after SIGTERM.
const (
	ctpKillWait  = 15 * time.Second
	ctpStopBound = time.Minute
	ctpMaxRuns   = 1000
)

// eosChild is one member of another client: its current process and its
// counts over its processes.
type eosChild struct {
	name, txnID string
	java        bool
	// begun gets a value (without blocking) when a transaction begins.
	begun chan struct{}

	// Guarded by EOSWorkload.mu.
	proc                                  *ctpProc
	inTxn                                 bool
	runs                                  int // processes started
	sessions, committed, aborted, unknown int
	kills, killsInTxn                     int
	lastCommit                            time.Duration
}

type ctpProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startChildren starts the configured members of other clients.
func (w *EOSWorkload) startChildren() error {
	for i := range w.o.ConfluentMembers {
		w.children = append(w.children, &eosChild{name: fmt.Sprintf("confluent member %d", i),
			txnID: fmt.Sprintf("%s-confluent-%d", w.o.Group, i), begun: make(chan struct{}, 1)})
	}
	for i := range w.o.JavaMembers {
		w.children = append(w.children, &eosChild{name: fmt.Sprintf("java member %d", i), java: true,
			txnID: fmt.Sprintf("%s-java-%d", w.o.Group, i), begun: make(chan struct{}, 1)})
	}
	for _, c := range w.children {
		if err := w.startChild(c); err != nil {
			return err
		}
	}
	return nil
}

// startChild starts a new process of member c.
func (w *EOSWorkload) startChild(c *eosChild) error {
	w.mu.Lock()
	run := c.runs
	c.runs++
	w.mu.Unlock()
	if run >= ctpMaxRuns {
		return fmt.Errorf("%w: %s started %d times", ErrEOSChild, c.name, run)
	}
	clientID := fmt.Sprintf("%s-%d", strings.ReplaceAll(c.name, " ", "-"), run+1)
	var cmd *exec.Cmd
	if c.java {
		cmd = exec.Command("java", "-cp", w.o.JavaClasspath, javaCTPClass, strings.Join(w.addrs, ","),
			w.o.Input, w.o.Output, w.o.Group, c.txnID, clientID)
	} else {
		cmd = exec.Command(os.Args[0], "-test.run=^TestConfluentCTPChild$", "-test.timeout=0")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%s;%s;%s;%s", ctpEnv,
			strings.Join(w.addrs, ","), w.o.Input, w.o.Output, w.o.Group, c.txnID, clientID))
	}
	cmd.Stderr = io.Discard
	var logFile *os.File
	if d := w.o.ClientLogDir; d != "" {
		if f, err := os.Create(filepath.Join(d, fmt.Sprintf("eos-%s.log", clientID))); err == nil {
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
		return fmt.Errorf("%w: %s: %w", ErrEOSChild, c.name, err)
	}
	p := &ctpProc{cmd: cmd, done: make(chan struct{})}
	w.mu.Lock()
	c.proc, c.inTxn = p, false
	w.mu.Unlock()
	w.childrenWG.Add(1)
	go w.readChild(c, p, out)
	return nil
}

// readChild records child c's reports until its stdout closes, then
// reaps it.
func (w *EOSWorkload) readChild(c *eosChild, p *ctpProc, out io.Reader) {
	defer w.childrenWG.Done()
	defer close(p.done)
	scanLines(out, func(line string) { w.childReport(c, line) })
	_ = p.cmd.Wait()
}

// childReport records one line of child c's stdout (lines without
// ctpPrefix are the test framework's or the JVM's: ignored).
func (w *EOSWorkload) childReport(c *eosChild, text string) {
	line, ok := strings.CutPrefix(text, ctpPrefix)
	if !ok {
		return
	}
	kind, rest, _ := strings.Cut(line, " ")
	if kind == "E" {
		// librdkafka ends a connection error with how long it took and
		// how many like it it suppressed: one kind all the same.
		msg, _, _ := strings.Cut(rest, " (after ")
		w.errs.Add(c.name, "client", errors.New(msg))
		return
	}
	nStr, why, _ := strings.Cut(rest, " ")
	n, _ := strconv.Atoi(nStr)
	at := time.Since(w.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch kind {
	case "S":
		c.sessions++
	case "B":
		c.inTxn = true
		select {
		case c.begun <- struct{}{}:
		default:
		}
	case "C":
		c.inTxn = false
		c.committed++
		c.lastCommit = at
		w.hist.Committed++
		w.outputs.Add(int64(n))
	case "A":
		c.inTxn = false
		c.aborted++
		w.hist.Aborted++
		w.errs.Add(c.name, "transaction aborted", errors.New(why))
	case "U":
		c.inTxn = false
		c.unknown++
		w.hist.Unknown++
		w.errs.Add(c.name, "transaction outcome unknown", errors.New(why))
	}
}

// EOSChildren is the number of members of other clients (confluent
// first, then Java).
func (w *EOSWorkload) EOSChildren() int { return len(w.children) }

// EOSChildName is the name of member of another client i.
func (w *EOSWorkload) EOSChildName(i int) string { return w.children[i].name }

// KillEOSChild waits (at most ctpKillWait) until member of another client
// i begins a transaction, SIGKILLs its process and starts a new one. It
// reports whether the process was inside a transaction when killed (its
// outcome is then unknown until the new process's InitTransactions, or
// the coordinator's timeout, aborts it).
func (w *EOSWorkload) KillEOSChild(i int) (inTxn bool, err error) {
	c := w.children[i]
	select { // a begin reported earlier does not count
	case <-c.begun:
	default:
	}
	t := time.NewTimer(ctpKillWait)
	select {
	case <-c.begun:
	case <-t.C:
	}
	t.Stop()
	w.mu.Lock()
	p := c.proc
	w.mu.Unlock()
	if p != nil {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	w.mu.Lock()
	inTxn = c.inTxn
	c.kills++
	if inTxn {
		c.killsInTxn++
		c.unknown++
		w.hist.Unknown++
		c.inTxn = false
	}
	w.mu.Unlock()
	if w.o.Logf != nil {
		w.o.Logf("faults: +%.1fs (%s) SIGKILL %s (transactional.id %s, inside a transaction: %v); restarting it",
			time.Since(w.start).Seconds(), time.Now().UTC().Format(wallClock), c.name, c.txnID, inTxn)
	}
	return inTxn, w.startChild(c)
}

// EOSChildKills returns the kills of members of other clients, and those
// that hit a transaction under way.
func (w *EOSWorkload) EOSChildKills() (kills, inTxn int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.children {
		kills += c.kills
		inTxn += c.killsInTxn
	}
	return kills, inTxn
}

// EOSChildCommitted returns the transactions each member of another
// client committed, over its processes.
func (w *EOSWorkload) EOSChildCommitted() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, len(w.children))
	for i, c := range w.children {
		out[i] = c.committed
	}
	return out
}

// stopChildren SIGTERMs the children (each ends its transaction under
// way and leaves the group) and waits, bounded, killing the late ones.
func (w *EOSWorkload) stopChildren() error {
	w.mu.Lock()
	var children []childToStop
	for _, c := range w.children {
		if c.proc != nil {
			children = append(children, childToStop{cmd: c.proc.cmd, done: c.proc.done, name: c.name})
			c.proc = nil
		}
	}
	w.mu.Unlock()
	err := termChildren(children, ctpStopBound, ErrEOSChild)
	w.childrenWG.Wait()
	return err
}

// childSessionsLocked is the sessions of the children (REQUIRES: w.mu held).
func (w *EOSWorkload) childSessionsLocked() int {
	n := 0
	for _, c := range w.children {
		n += c.sessions
	}
	return n
}

// childProgressLocked is one line of each child's counts (REQUIRES: w.mu
// held).
func (w *EOSWorkload) childProgressLocked(b *strings.Builder) {
	for _, c := range w.children {
		fmt.Fprintf(b, "; %s: processes=%d sessions=%d committed=%d aborted=%d unknown=%d kills=%d (in a transaction %d) last-commit=+%.1fs",
			c.name, c.runs, c.sessions, c.committed, c.aborted, c.unknown, c.kills, c.killsInTxn, c.lastCommit.Seconds())
	}
}
