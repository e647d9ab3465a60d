package faults

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// A second client in the test bed: idempotent acks=all producers of
// confluent-kafka-go (librdkafka), each in a child process (the test
// binary running TestConfluentProducerChild), so that librdkafka's own
// retries, idempotence and sequence handling meet the faults beside
// franz-go's. The child sends "p<id>-<seq>" round-robin over the
// partitions and reports each delivery on stdout; the parent turns the
// reports into Acks and Failures of a queue History, so Check judges
// them with the franz-go producers' records (lost, duplicated, reordered,
// inconsistent offsets).

// ErrConfluentChild is returned when a confluent producer process cannot
// be started or does not stop in time.
var ErrConfluentChild = errors.New("faults: confluent producer process")

// confluentEnv carries a child's parameters:
// "addr,addr;topic;partitions;id;interval".
const confluentEnv = "SAMSA_FAULTS_CONFLUENT_PRODUCER"

// confluentPrefix starts every report line of a child: "CFP A seq
// partition offset msgid" (acknowledged; msgid is librdkafka's number of
// the message in its partition) or "CFP F seq error" (failed, outcome
// unknown).
const confluentPrefix = "CFP "

// confluentStopBound bounds how long a child gets after SIGTERM to flush
// (it flushes for 90 s at most) and exit.
const confluentStopBound = 2 * time.Minute

// ConfluentProducers runs confluent-kafka-go producers in child processes.
type ConfluentProducers struct {
	mu       sync.Mutex
	acks     []Ack
	failures []Failure
	procs    []*confluentProc
	// evidenceProcs are every child started, kept after Stop for their
	// RdkEvidence.
	evidenceProcs []*confluentProc
}

type confluentProc struct {
	id       int
	cmd      *exec.Cmd
	done     chan struct{}
	logDone  chan struct{} // closed when readLog is done
	evidence *RdkEvidence  // guarded by ConfluentProducers.mu
}

// confluentLogEnv tells a child producer to log librdkafka's idempotence
// and message events (debug "eos,msg") on its stderr, which the parent
// reads (RdkEvidence) and keeps in a file when asked.
const confluentLogEnv = "SAMSA_FAULTS_CONFLUENT_DEBUG"

// StartConfluentProducers starts n producers with ids firstID.. (their
// values are "p<id>-<seq>"), each sending one record every interval.
func StartConfluentProducers(addrs []string, topic string, partitions int32, n, firstID int, interval time.Duration) (*ConfluentProducers, error) {
	return StartConfluentProducersLogged(addrs, topic, partitions, n, firstID, interval, "")
}

// StartConfluentProducersLogged is StartConfluentProducers keeping each
// child's librdkafka debug log (eos and msg events: produce errors,
// retries, sequence numbers, deliveries) in logDir as
// confluent-producer-<id>.log ("": no file). The parent always reads that
// log, for the lines RdkEvidence needs.
func StartConfluentProducersLogged(addrs []string, topic string, partitions int32, n, firstID int, interval time.Duration, logDir string) (*ConfluentProducers, error) {
	c := &ConfluentProducers{}
	for i := range n {
		id := firstID + i
		cmd := exec.Command(os.Args[0], "-test.run=^TestConfluentProducerChild$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s;%s;%d;%d;%s", confluentEnv,
			strings.Join(addrs, ","), topic, partitions, id, interval), confluentLogEnv+"=1")
		var keep *os.File
		if logDir != "" {
			f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("confluent-producer-%d.log", id)))
			if err != nil {
				c.Stop()
				return nil, fmt.Errorf("%w: %w", ErrConfluentChild, err)
			}
			keep = f
		}
		out, err := cmd.StdoutPipe()
		var errOut io.ReadCloser
		if err == nil {
			errOut, err = cmd.StderrPipe()
		}
		if err == nil {
			err = childproc.Start(cmd)
		}
		if err != nil {
			if keep != nil {
				keep.Close()
			}
			c.Stop()
			return nil, fmt.Errorf("%w: %w", ErrConfluentChild, err)
		}
		p := &confluentProc{id: id, cmd: cmd, done: make(chan struct{}), logDone: make(chan struct{}),
			evidence: &RdkEvidence{Topic: topic}}
		c.procs = append(c.procs, p)
		c.evidenceProcs = append(c.evidenceProcs, p)
		go c.readLog(p, errOut, keep)
		go c.read(p, out)
	}
	return c, nil
}

// readLog reads a child's librdkafka log until its stderr closes: the
// lines RdkEvidence knows go to p.evidence, every line to keep (if any).
func (c *ConfluentProducers) readLog(p *confluentProc, errOut io.Reader, keep *os.File) {
	defer close(p.logDone)
	if keep != nil {
		defer keep.Close()
	}
	sc := bufio.NewScanner(errOut)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if keep != nil {
			_, _ = fmt.Fprintln(keep, line)
		}
		c.mu.Lock()
		p.evidence.AddLine(line)
		c.mu.Unlock()
	}
	// A line over 1 MiB ends the scan: drain the rest so the child never
	// blocks on a full pipe.
	_, _ = io.Copy(io.Discard, errOut)
}

// read parses a child's reports until its stdout closes, then reaps it.
func (c *ConfluentProducers) read(p *confluentProc, out io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), confluentPrefix)
		if !ok {
			continue
		}
		f := strings.SplitN(line, " ", 5)
		if len(f) < 3 {
			continue
		}
		seq, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		value := fmt.Sprintf("p%d-%d", p.id, seq)
		switch f[0] {
		case "A":
			if len(f) != 5 {
				continue
			}
			part, err1 := strconv.ParseInt(f[2], 10, 32)
			off, err2 := strconv.ParseInt(f[3], 10, 64)
			msgID, err3 := strconv.ParseUint(f[4], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				continue
			}
			c.mu.Lock()
			c.acks = append(c.acks, Ack{Producer: p.id, Seq: seq, Partition: int32(part), Offset: off, Value: value, MsgID: msgID})
			c.mu.Unlock()
		case "F":
			c.mu.Lock()
			c.failures = append(c.failures, Failure{Value: value, Err: "confluent: " + strings.Join(f[2:], " ")})
			c.mu.Unlock()
		}
	}
	// Wait may close the pipes only after both readers are done.
	<-p.logDone
	_ = p.cmd.Wait()
}

// Acked is the number of records acknowledged so far.
func (c *ConfluentProducers) Acked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acks)
}

// Stop asks every child to flush and exit (SIGTERM) and waits, bounded;
// a child still running then is killed and an error returned.
func (c *ConfluentProducers) Stop() error {
	children := make([]childToStop, len(c.procs))
	for i, p := range c.procs {
		children[i] = childToStop{cmd: p.cmd, done: p.done, name: fmt.Sprintf("producer %d", p.id)}
	}
	err := termChildren(children, confluentStopBound, ErrConfluentChild)
	c.procs = nil
	return err
}

// MergeInto adds the children's acknowledged and failed sends, and what
// their librdkafka logs prove (RdkEvidence), to h.
func (c *ConfluentProducers) MergeInto(h *History) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.Acks = append(h.Acks, c.acks...)
	h.Failures = append(h.Failures, c.failures...)
	for _, p := range c.evidenceProcs {
		if h.Librdkafka == nil {
			h.Librdkafka = make(map[int]*RdkEvidence)
		}
		h.Librdkafka[p.id] = p.evidence
	}
}
