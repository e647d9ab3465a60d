package faults

import (
	"io"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// TestProxyPartitionCutsLinks checks the proxy network, the fallback for
// machines without network namespaces, by forcing it: behind node 2's
// proxy is an echo server; this test process plays node 1 and a helper
// process node 3. A link between nodes in different groups stalls (bytes
// are held, a new connection goes through nothing), a bridge node and a
// client that is no node still get through, and after Heal the held bytes
// arrive.
func TestProxyPartitionCutsLinks(t *testing.T) {
	if !ProxyAvailable() {
		t.Skip("the proxy network reads /proc")
	}
	echo, front := echoAndFront(t)
	p := NewProxyNet(3, []net.Listener{front}, []proxyTarget{{dst: 1, addr: echo.Addr().String()}})
	defer p.Close()
	var asNode atomic.Bool // whether this process counts as node 1
	asNode.Store(true)
	var helperPid atomic.Int64
	p.SetPids(func(i int) int {
		switch {
		case i == 0 && asNode.Load():
			return os.Getpid()
		case i == 2:
			return int(helperPid.Load())
		}
		return 0
	})
	addr := front.Addr().String()
	dialPing := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// echoed reports whether "ping" comes back on c within d.
	echoed := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		buf := make([]byte, 4)
		_, err := io.ReadFull(c, buf)
		return err == nil && string(buf) == "ping"
	}
	before := dialPing()
	defer before.Close()
	if !echoed(before, 10*time.Second) {
		t.Fatal("node 1 cannot reach node 2 on a healthy network")
	}
	if err := p.Partition([][]int{{0}, {1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := before.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	during := dialPing()
	defer during.Close()
	// A stall cannot be proven by waiting forever: 1.5 s without an echo
	// (a healthy echo takes microseconds) is the evidence.
	if echoed(before, 1500*time.Millisecond) || echoed(during, 1500*time.Millisecond) {
		t.Fatal("node 1 reaches node 2 across a partition")
	}
	// The bridge node (in no group) gets through.
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	helper.Env = append(os.Environ(), "FAULTS_HELPER=echo-dial", "FAULTS_HELPER_ADDR="+addr)
	if err := childproc.Start(helper); err != nil {
		t.Fatal(err)
	}
	helperPid.Store(int64(helper.Process.Pid))
	if err := helper.Wait(); err != nil {
		t.Fatalf("bridge node 3 cannot reach node 2: %v", err)
	}
	// A client that is no node is never cut.
	asNode.Store(false)
	client := dialPing()
	defer client.Close()
	if !echoed(client, 10*time.Second) {
		t.Fatal("a client cannot reach node 2 during a partition of the nodes")
	}
	asNode.Store(true)
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	// What the cut held back arrives after the heal.
	if !echoed(before, 10*time.Second) || !echoed(during, 10*time.Second) {
		t.Fatal("bytes held by the cut did not arrive after Heal")
	}
}

// echoAndFront starts an echo server and opens a front listener for a
// proxy under test, both on loopback; the echo server stops with the test
// (the proxy owns front).
func echoAndFront(t *testing.T) (echo, front net.Listener) {
	t.Helper()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	front, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return echo, front
}
