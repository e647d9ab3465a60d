package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StartTimeout bounds how long Start waits for the broker to answer ApiVersions.
const StartTimeout = 20 * time.Second

// RestartTimeout bounds how long Restart waits: a restarted node of a
// cluster serves only once its registration reached the quorum's
// metadata (as a Kafka broker waits for its initial catch-up), which on a
// loaded machine can wait out a few controller elections.
const RestartTimeout = 60 * time.Second

// StopTimeout bounds how long Stop and Kill wait for the process to exit.
const StopTimeout = 20 * time.Second

// ErrHarnessNoModuleRoot is returned when no go.mod is found above the working directory.
var ErrHarnessNoModuleRoot = errors.New("harness: no go.mod found above the working directory")

var build struct {
	once sync.Once
	path string
	dir  string // the temp dir Build made ("" with SAMSA_BINARY)
	err  error
	out  []byte
}

// Main runs a test binary's tests and then removes the samsa binary Build
// compiled for them: call it from the package's TestMain
// (os.Exit(harness.Main(m))). Without it each run left a ~28 MB directory
// in the temp dir (1,040 of them filled a disk).
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// Build compiles ./cmd/samsa once per test binary and returns the path of the binary.
// If SAMSA_BINARY is set, that binary is used instead.
func Build(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if p := os.Getenv("SAMSA_BINARY"); p != "" {
			build.path = p
			return
		}
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		dir, err := os.MkdirTemp("", "samsa-compat-bin-")
		if err != nil {
			build.err = fmt.Errorf("harness: temp dir: %w", err)
			return
		}
		build.dir, build.path = dir, filepath.Join(dir, "samsa")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/samsa")
		cmd.Dir = root
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("harness: building samsa: %v\n%s", build.err, build.out)
	}
	return build.path
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("harness: getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrHarnessNoModuleRoot
		}
		dir = parent
	}
}

// Options configures a broker started by Start.
type Options struct {
	// Overrides are passed as extra `--override key=value` flags, in key order.
	Overrides map[string]string
	// Env is appended to the test process's environment.
	Env []string
	// Dir is the data directory (log.dirs); "" means a fresh t.TempDir().
	Dir string
	// ListenersExtra is appended to listeners and advertised.listeners
	// after the PLAINTEXT one ("SSL://127.0.0.1:9093,..."): listeners of
	// other protocols, configured through Env or Overrides.
	ListenersExtra string
	// ControllerListener adds a CONTROLLER listener on a free loopback
	// port to listeners (not advertised), with controller.listener.names
	// and controller.quorum.voters naming it: a quorum of one over Raft,
	// configured as kafka-ref.sh configures Kafka.
	ControllerListener bool
}

// Broker is one running (or stopped) samsa process.
type Broker struct {
	// Addr is the PLAINTEXT listener, 127.0.0.1:port.
	Addr string
	// Dir is the data directory (log.dirs).
	Dir string
	// ExtraDirs are more log directories after Dir (ClusterOptions.ExtraLogDirs).
	ExtraDirs []string

	binary  string
	options Options
	port    int
	// controllerPort is the CONTROLLER listener's (ControllerListener).
	controllerPort int
	// clusterEnv: the node is configured by its environment block alone
	// (StartCluster), and args pass only log.dirs.
	clusterEnv bool

	mu      sync.Mutex
	output  bytes.Buffer // every run's stdout and stderr, in order
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
	runs    int
}

// lockedWriter lets the broker's stdout and stderr pipes append to one buffer.
type lockedWriter struct{ b *Broker }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.output.Write(p)
}

// Start builds samsa if needed, picks a free port, runs the broker and waits until it
// answers an ApiVersions request. The broker is killed at test cleanup if still running,
// and its output is logged if the test failed.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	b := &Broker{binary: Build(t), options: o, Dir: o.Dir}
	if b.Dir == "" {
		b.Dir = t.TempDir()
	}
	t.Cleanup(func() {
		b.killIfRunning()
		if t.Failed() {
			t.Logf("samsa output (%s):\n%s", b.Addr, b.Output())
		}
	})
	// A port picked by listening on :0 can be taken by someone else before the broker
	// binds it; retry a few times on early exit.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("harness: free port: %v", err)
		}
		b.port = port
		b.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if o.ControllerListener {
			if b.controllerPort, err = freePort(); err != nil {
				t.Fatalf("harness: free port: %v", err)
			}
		}
		if lastErr = b.launch(); lastErr != nil {
			t.Fatalf("harness: %v", lastErr)
		}
		lastErr = b.waitReady()
		if lastErr == nil {
			return b
		}
		if !b.hasExited() {
			break
		}
	}
	t.Fatalf("harness: samsa did not become ready on %s: %v\noutput:\n%s", b.Addr, lastErr, b.Output())
	return nil
}

func freePort() (int, error) { return pickPort() }

func (b *Broker) args() []string {
	if b.clusterEnv {
		return []string{"--override", "log.dirs=" + strings.Join(append([]string{b.Dir}, b.ExtraDirs...), ",")}
	}
	listener := "PLAINTEXT://" + b.Addr
	if b.options.ListenersExtra != "" {
		listener += "," + b.options.ListenersExtra
	}
	listeners := listener
	args := []string{
		"--override", "advertised.listeners=" + listener,
		"--override", "log.dirs=" + b.Dir,
		"--override", "node.id=1",
	}
	if b.options.ControllerListener {
		ctrl := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.controllerPort))
		listeners += ",CONTROLLER://" + ctrl
		args = append(args,
			"--override", "controller.listener.names=CONTROLLER",
			"--override", "controller.quorum.voters=1@"+ctrl)
	}
	args = append([]string{"--override", "listeners=" + listeners}, args...)
	keys := make([]string, 0, len(b.options.Overrides))
	for k := range b.options.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--override", k+"="+b.options.Overrides[k])
	}
	return args
}

func (b *Broker) launch() error {
	cmd := exec.Command(b.binary, b.args()...)
	cmd.Env = append(os.Environ(), b.options.Env...)
	cmd.Stdout = lockedWriter{b}
	cmd.Stderr = lockedWriter{b}
	b.mu.Lock()
	b.runs++
	fmt.Fprintf(&b.output, "=== harness: run %d: %s %v\n", b.runs, b.binary, cmd.Args[1:])
	b.mu.Unlock()
	if err := childproc.Start(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", b.binary, err)
	}
	exited := make(chan struct{})
	b.mu.Lock()
	b.cmd = cmd
	b.exited = exited
	b.exitErr = nil
	b.mu.Unlock()
	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		b.exitErr = err
		fmt.Fprintf(&b.output, "=== harness: run %d exited: %v\n", b.runs, exitString(err))
		b.mu.Unlock()
		close(exited)
	}()
	return nil
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func (b *Broker) hasExited() bool {
	b.mu.Lock()
	ch := b.exited
	b.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitReady polls until a TCP connection and an ApiVersions round trip succeed.
func (b *Broker) waitReady() error {
	return b.waitReadyWithin(StartTimeout)
}

// waitReadyWithin is waitReady bounded by limit.
func (b *Broker) waitReadyWithin(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	b.mu.Lock()
	exited := b.exited
	b.mu.Unlock()
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	var lastErr error
	for {
		select {
		case <-exited:
			b.mu.Lock()
			err := b.exitErr
			b.mu.Unlock()
			return fmt.Errorf("samsa exited before becoming ready: %s", exitString(err))
		case <-ctx.Done():
			return fmt.Errorf("timed out after %v: last error: %v", limit, lastErr)
		case <-ticker.C:
		}
		if lastErr = b.probe(ctx); lastErr == nil {
			return nil
		}
	}
}

func (b *Broker) probe(ctx context.Context) error { return Probe(ctx, b.Addr) }

// Probe reports whether the broker at addr answers ApiVersions with its API
// keys within 2 s (a TCP connect first, so that a closed port costs no
// client): the readiness check of the harness and of the fault test bed.
func Probe(ctx context.Context, addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "samsa-harness"
	req.ClientSoftwareVersion = "1"
	resp, err := req.RequestWith(pctx, cl)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	if len(resp.ApiKeys) == 0 {
		return errors.New("ApiVersions returned no keys")
	}
	return nil
}

// signalAndWait sends sig and waits for the process to exit, returning its exit error.
func (b *Broker) signalAndWait(t testing.TB, sig os.Signal) error {
	t.Helper()
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	if cmd == nil {
		t.Fatalf("harness: broker %s was never started", b.Addr)
	}
	select {
	case <-exited:
		b.mu.Lock()
		err := b.exitErr
		b.mu.Unlock()
		t.Fatalf("harness: broker %s had already exited (%s)\noutput:\n%s", b.Addr, exitString(err), b.Output())
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("harness: signal %v to pid %d: %v", sig, cmd.Process.Pid, err)
	}
	timer := time.NewTimer(StopTimeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("harness: broker %s did not exit within %v of %v\noutput:\n%s", b.Addr, StopTimeout, sig, b.Output())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exitErr
}

// Stop sends SIGTERM, waits for the process to exit, and fails the test unless it exits 0.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	if err := b.signalAndWait(t, syscall.SIGTERM); err != nil {
		t.Fatalf("harness: broker %s exited with %v after SIGTERM\noutput:\n%s", b.Addr, err, b.Output())
	}
}

// Kill sends SIGKILL and waits for the process to exit.
func (b *Broker) Kill(t testing.TB) {
	t.Helper()
	_ = b.signalAndWait(t, syscall.SIGKILL)
}

// Restart starts the broker again on the same port and data directory and waits until it
// answers ApiVersions. The broker must have been stopped or killed first.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if !b.hasExited() {
		t.Fatalf("harness: Restart of %s while it is still running", b.Addr)
	}
	if err := b.launch(); err != nil {
		t.Fatalf("harness: %v", err)
	}
	if err := b.waitReadyWithin(RestartTimeout); err != nil {
		t.Fatalf("harness: samsa did not become ready again on %s: %v\noutput:\n%s", b.Addr, err, b.Output())
	}
}

// Output returns everything the broker wrote to stdout and stderr over all its runs,
// with harness marker lines between runs.
func (b *Broker) Output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.output.String()
}

// LastRunOutput returns the output of the most recent run only.
func (b *Broker) LastRunOutput() string {
	out := b.Output()
	marker := fmt.Sprintf("=== harness: run %d:", b.runCount())
	if i := bytes.LastIndex([]byte(out), []byte(marker)); i >= 0 {
		return out[i:]
	}
	return out
}

func (b *Broker) runCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs
}

// PID returns the process id of the current run, or 0.
func (b *Broker) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

func (b *Broker) killIfRunning() {
	if b.hasExited() {
		return
	}
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	_ = cmd.Process.Kill()
	timer := time.NewTimer(StopTimeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
	}
}
