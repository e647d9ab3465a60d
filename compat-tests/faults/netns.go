package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Names of everything the namespace network creates carry a prefix and the
// pid of the test process, so that a sweep at start can tell stale objects
// (whose pid is dead) from those of a test running in parallel.
const (
	nsPrefix     = "samsaf-" // namespaces: samsaf-<pid>-<node>
	bridgePrefix = "sfb"     // bridge: sfb<pid>
	vethPrefix   = "sfh"     // host side of a node's veth: sfh<pid>x<node>
	vethNSPrefix = "sfn"     // namespace side, renamed to eth0 inside
	ipTimeout    = 20 * time.Second
)

// ErrNoNamespaces is returned by NewNamespaceNet when network namespaces
// cannot be used here (not root, no ip binary, or the kernel refuses).
var ErrNoNamespaces = errors.New("faults: network namespaces unavailable")

// ErrIP wraps a failed ip(8) command.
var ErrIP = errors.New("faults: ip command failed")

// NamespaceNet puts each node in its own network namespace, joined to the
// test process by a veth pair per node on one bridge. A partition is made of
// blackhole routes inside the namespaces (packets to a cut peer are dropped
// silently, as on a real network failure; established TCP connections stall
// rather than reset). The test process, on the bridge, reaches every node
// whatever the partition: faults cut links between nodes, not clients.
type NamespaceNet struct {
	pid    int
	n      int
	subnet string // "10.77.X"
	bridge string
	// cut[i][j]: node i has a blackhole route to node j (0-based).
	cut [][]bool
}

// namespace returns the namespace name of node i (0-based).
func (nn *NamespaceNet) namespace(i int) string {
	return fmt.Sprintf("%s%d-%d", nsPrefix, nn.pid, i+1)
}

// IP returns the address of node i (0-based).
func (nn *NamespaceNet) IP(i int) string { return fmt.Sprintf("%s.%d", nn.subnet, 11+i) }

// Wrap returns the command line that runs argv inside node i's namespace.
func (nn *NamespaceNet) Wrap(i int, argv []string) []string {
	return append([]string{"ip", "netns", "exec", nn.namespace(i)}, argv...)
}

// NamespacesAvailable reports whether this process may create network
// namespaces: root and an ip binary.
func NamespacesAvailable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := exec.LookPath("ip")
	return err == nil
}

func runIP(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: ip %s: %v: %s", ErrIP, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func outputIP(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).Output()
	if err != nil {
		return "", fmt.Errorf("%w: ip %s: %v", ErrIP, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// NewNamespaceNet creates n namespaces, the bridge and the veth pairs. On
// error everything created so far is removed.
func NewNamespaceNet(n int) (*NamespaceNet, error) {
	if !NamespacesAvailable() {
		return nil, ErrNoNamespaces
	}
	if n < 1 || n > 9 {
		return nil, fmt.Errorf("faults: %d nodes: namespace net supports 1 to 9", n)
	}
	SweepStale()
	pid := os.Getpid()
	nn := &NamespaceNet{
		pid:    pid,
		n:      n,
		bridge: fmt.Sprintf("%s%d", bridgePrefix, pid),
	}
	nn.cut = make([][]bool, n)
	for i := range nn.cut {
		nn.cut[i] = make([]bool, n)
	}
	// Two test processes whose pids were equal modulo 250 used to get the
	// same subnet, and one's clients reached the other's nodes: the
	// subnet is now the first one no interface holds, chosen and taken
	// under a lock shared by the test processes of the machine.
	unlock := lockSubnets()
	subnet, err := freeSubnet(pid)
	if err == nil {
		nn.subnet = subnet
		err = nn.setup()
	}
	unlock()
	if err != nil {
		nn.Close()
		return nil, fmt.Errorf("%w: %w", ErrNoNamespaces, err)
	}
	return nn, nil
}

// subnetLock is the file whose flock serializes the choice of subnets.
const subnetLock = "/tmp/samsa-faults-subnets.lock"

// lockSubnets takes the machine-wide subnet lock (best effort: without the
// file, no lock) and returns its release.
func lockSubnets() func() {
	f, err := os.OpenFile(subnetLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// freeSubnet returns the first "10.77.X" from pid%250+1 on (cyclically)
// that no interface of the host holds an address in.
func freeSubnet(pid int) (string, error) {
	out, err := outputIP("-4", "-o", "addr", "show")
	if err != nil {
		return "", err
	}
	for k := range 250 {
		subnet := fmt.Sprintf("10.77.%d", (pid+k)%250+1)
		if !strings.Contains(out, " "+subnet+".") {
			return subnet, nil
		}
	}
	return "", fmt.Errorf("faults: every 10.77.X subnet is in use")
}

func (nn *NamespaceNet) setup() error {
	steps := [][]string{
		{"link", "add", nn.bridge, "type", "bridge"},
		{"addr", "add", nn.subnet + ".1/24", "dev", nn.bridge},
		{"link", "set", nn.bridge, "up"},
	}
	for i := range nn.n {
		ns := nn.namespace(i)
		host := fmt.Sprintf("%s%dx%d", vethPrefix, nn.pid, i+1)
		peer := fmt.Sprintf("%s%dx%d", vethNSPrefix, nn.pid, i+1)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"link", "set", peer, "netns", ns},
			[]string{"link", "set", host, "master", nn.bridge},
			[]string{"link", "set", host, "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "link", "set", peer, "name", "eth0"},
			[]string{"-n", ns, "addr", "add", nn.IP(i) + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if err := runIP(s...); err != nil {
			return err
		}
	}
	return nil
}

// Partition sets the links between nodes: nodes in different groups cannot
// reach each other; a node in no group reaches everyone (a bridge node).
// Partition(nil) heals everything. Node numbers are 0-based.
func (nn *NamespaceNet) Partition(groups [][]int) error {
	groupOf := make([]int, nn.n)
	for i := range groupOf {
		groupOf[i] = -1
	}
	for g, members := range groups {
		for _, m := range members {
			groupOf[m] = g
		}
	}
	for i := range nn.n {
		for j := range nn.n {
			if i == j {
				continue
			}
			want := groupOf[i] >= 0 && groupOf[j] >= 0 && groupOf[i] != groupOf[j]
			if want == nn.cut[i][j] {
				continue
			}
			verb := "add"
			if !want {
				verb = "del"
			}
			if err := runIP("-n", nn.namespace(i), "route", verb, "blackhole", nn.IP(j)+"/32"); err != nil {
				return err
			}
			nn.cut[i][j] = want
		}
	}
	return nil
}

// Heal removes every cut.
func (nn *NamespaceNet) Heal() error { return nn.Partition(nil) }

// Close removes the namespaces, veths and bridge. Processes still running
// in a namespace keep it alive until they exit, so kill them first.
func (nn *NamespaceNet) Close() {
	for i := range nn.n {
		_ = runIP("link", "del", fmt.Sprintf("%s%dx%d", vethPrefix, nn.pid, i+1))
		_ = runIP("netns", "del", nn.namespace(i))
	}
	_ = runIP("link", "del", nn.bridge)
}

// SweepStale removes namespaces, bridges and veths left by earlier test
// processes (with our prefixes) whose pid is no longer alive.
func SweepStale() {
	if out, err := outputIP("netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			rest, ok := strings.CutPrefix(name, nsPrefix)
			if !ok {
				continue
			}
			pidStr, _, _ := strings.Cut(rest, "-")
			if pid, err := strconv.Atoi(pidStr); err == nil && !alive(pid) {
				_ = runIP("netns", "del", name)
			}
		}
	}
	if out, err := outputIP("-o", "link", "show"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			// "12: sfb123: <...>" or "13: sfh123x1@if12: <...>"
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
			var rest string
			switch {
			case strings.HasPrefix(name, bridgePrefix):
				rest = strings.TrimPrefix(name, bridgePrefix)
			case strings.HasPrefix(name, vethPrefix):
				rest, _, _ = strings.Cut(strings.TrimPrefix(name, vethPrefix), "x")
			default:
				continue
			}
			if pid, err := strconv.Atoi(rest); err == nil && !alive(pid) {
				_ = runIP("link", "del", name)
			}
		}
	}
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
