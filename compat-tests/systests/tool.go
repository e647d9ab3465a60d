package systests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// ToolStopTimeout bounds how long a tool takes to exit after SIGTERM (the
// Python services allow 30 to 150 s; a producer flushing through a broker
// that is down takes up to its delivery timeout).
const ToolStopTimeout = 150 * time.Second

// Tools starts Kafka's Java test tools against one cluster.
type Tools struct {
	classpath string
	bootstrap string
	dir       string
	log4j     string
	// clientProps go first in every properties file (WithClientProps).
	clientProps []string
}

// NewTools resolves the Kafka 4.4.0 classpath (skipping the test when java
// or mvn is missing, failing it under SAMSA_REQUIRE_CLIENTS=1) and returns
// tools that connect to bootstrap.
func NewTools(t testing.TB, bootstrap string) *Tools {
	t.Helper()
	cp := kafkaref.Classpath(t)
	dir := t.TempDir()
	log4j := filepath.Join(dir, "log4j2-tools.properties")
	// WARN and above to stderr, which goes to a file per process (logged
	// when the test fails): the clients' retries under broker bounces are
	// WARN lines, useful when a scenario fails.
	if err := os.WriteFile(log4j, []byte(log4jConf(nil)), 0o644); err != nil {
		t.Fatal(err)
	}
	return &Tools{classpath: cp, bootstrap: bootstrap, dir: dir, log4j: log4j}
}

// log4jConf is the tools' log4j2 configuration: WARN and above to stderr,
// and the loggers at their levels.
func log4jConf(loggers map[string]string) string {
	conf := "status = warn\nappender.err.type = Console\nappender.err.name = err\nappender.err.target = SYSTEM_ERR\n" +
		"appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = [%d] %p %m (%c)%n\n" +
		"rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = err\n"
	i := 0
	for l, level := range loggers {
		conf += fmt.Sprintf("logger.l%d.name = %s\nlogger.l%d.level = %s\n", i, l, i, level)
		i++
	}
	return conf
}

// writeLog4j writes a log4j2 configuration with loggers (name: level) and
// returns its path.
func (tl *Tools) writeLog4j(t testing.TB, name string, loggers map[string]string) string {
	t.Helper()
	p := filepath.Join(tl.dir, name)
	if err := os.WriteFile(p, []byte(log4jConf(loggers)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// WithClientProps returns tools connecting to bootstrap with props (the
// security.protocol, ssl.* and sasl.* settings of a secured listener)
// first in every producer and consumer properties file.
func (tl *Tools) WithClientProps(bootstrap string, props []string) *Tools {
	c := *tl
	c.bootstrap, c.clientProps = bootstrap, append([]string(nil), props...)
	return &c
}

// writeProps writes a client properties file and returns its path.
func (tl *Tools) writeProps(t testing.TB, name string, props []string) string {
	t.Helper()
	p := filepath.Join(tl.dir, name)
	all := append(append([]string(nil), tl.clientProps...), props...)
	if err := os.WriteFile(p, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// proc is one run (or several runs, after restarts) of one Java tool: its
// stdout lines go to handle, under mu, in order.
type proc struct {
	name   string
	tools  *Tools
	class  string
	args   []string
	handle func(line string, ev map[string]any) // REQUIRES: mu held
	// log4j is the log4j2 configuration of this tool ("": the tools').
	log4j string

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{}
		runs   int
		// unparsed counts stdout lines that are not JSON events (the
		// tools print only events; anything else is a sign of trouble).
		unparsed []string
	}
	stderrPath string
}

// start launches a new run of the tool.
func (p *proc) start(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	if p.mu.exited != nil {
		select {
		case <-p.mu.exited:
		default:
			p.mu.Unlock()
			t.Fatalf("systests: %s started while running", p.name)
		}
	}
	p.mu.runs++
	run := p.mu.runs
	p.mu.Unlock()

	log4j := p.tools.log4j
	if p.log4j != "" {
		log4j = p.log4j
	}
	args := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + log4j, "-cp", p.tools.classpath, p.class}, p.args...)
	cmd := exec.Command("java", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.stderrPath = filepath.Join(p.tools.dir, p.name+".stderr")
	errf, err := os.OpenFile(p.stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// Every stdout line also goes to a file, kept with stderr when the
	// test fails (SAMSA_SYSTESTS_KEEP).
	stdoutPath := filepath.Join(p.tools.dir, p.name+".stdout")
	outf, err := os.OpenFile(stdoutPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		errf.Close()
		t.Fatal(err)
	}
	if run == 1 {
		// Registered before the run's kill below, so run after it.
		keepFile(t, p.name+".stderr", p.stderrPath)
		keepFile(t, p.name+".stdout", stdoutPath)
	}
	fmt.Fprintf(errf, "=== run %d: java %s\n", run, strings.Join(args[len(args)-len(p.args)-1:], " "))
	fmt.Fprintf(outf, "=== run %d\n", run)
	cmd.Stderr = errf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		errf.Close()
		outf.Close()
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		errf.Close()
		outf.Close()
		t.Fatalf("systests: starting %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.mu.cmd, p.mu.exited = cmd, exited
	p.mu.Unlock()
	go func() {
		defer close(exited)
		defer errf.Close()
		defer outf.Close()
		w := bufio.NewWriter(outf)
		defer w.Flush()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			w.WriteString(time.Now().UTC().Format("15:04:05.000 ") + line + "\n")
			var ev map[string]any
			p.mu.Lock()
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev == nil {
				if len(p.mu.unparsed) < 20 {
					p.mu.unparsed = append(p.mu.unparsed, line)
				}
			} else {
				p.handle(line, ev)
			}
			p.mu.Unlock()
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-exited
		p.mu.Lock()
		last := p.mu.runs == run
		p.mu.Unlock()
		if t.Failed() && last {
			b, _ := os.ReadFile(p.stderrPath)
			t.Logf("systests: %s stderr (last 4 KiB):\n%s", p.name, lastBytes(b, 4096))
		}
	})
}

// stderr returns what the tool wrote to stderr over all its runs.
func (p *proc) stderr() string {
	b, _ := os.ReadFile(filepath.Join(p.tools.dir, p.name+".stderr"))
	return string(b)
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// signal sends sig to the process group of the current run, if running.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd, exited := p.mu.cmd, p.mu.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// Running reports whether the current run has not exited.
func (p *proc) Running() bool {
	p.mu.Lock()
	exited := p.mu.exited
	p.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM (clean) or SIGKILL and waits for the run to exit and
// its output to be read.
func (p *proc) stop(t testing.TB, clean bool) {
	t.Helper()
	sig := syscall.SIGKILL
	if clean {
		sig = syscall.SIGTERM
	}
	p.signal(sig)
	p.wait(t, ToolStopTimeout)
}

// wait waits for the current run to exit by itself.
func (p *proc) wait(t testing.TB, d time.Duration) {
	t.Helper()
	p.mu.Lock()
	exited := p.mu.exited
	p.mu.Unlock()
	if exited == nil {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		p.signal(syscall.SIGKILL)
		<-exited
		t.Fatalf("systests: %s did not exit within %v", p.name, d)
	}
}

// Unparsed returns the first stdout lines that were not JSON events.
func (p *proc) Unparsed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.mu.unparsed...)
}

// num reads a JSON number field as int64 (encoding/json gives float64,
// exact for the offsets and counts of a test).
func num(ev map[string]any, key string) int64 {
	f, _ := ev[key].(float64)
	return int64(f)
}

func str(ev map[string]any, key string) string {
	s, _ := ev[key].(string)
	return s
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func tpOf(m map[string]any) TopicPartition {
	return TopicPartition{Topic: str(m, "topic"), Partition: int32(num(m, "partition"))}
}

// Poll calls cond every 100 ms until it is true or d passes, and reports
// whether it became true.
func Poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

// Stable polls for up to d until f returns the same value for window (the
// system tests' none_consumed: a consumer that caught up).
func Stable(d, window time.Duration, f func() int64) bool {
	last, since := f(), time.Now()
	return Poll(d, func() bool {
		if v := f(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) >= window
	})
}
