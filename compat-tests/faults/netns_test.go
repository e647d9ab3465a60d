package faults

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// TestHelperProcess is not a test: run by TestNamespacePartitionCutsLinks
// inside a namespace, it listens on or dials FAULTS_HELPER_ADDR.
func TestHelperProcess(t *testing.T) {
	addr := os.Getenv("FAULTS_HELPER_ADDR")
	switch os.Getenv("FAULTS_HELPER") {
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			os.Exit(2)
		}
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(3)
			}
			c.Close()
		}
	case "dial":
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	case "echo-dial":
		// Through an echo server: exit 0 when "ping" comes back in time.
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			os.Exit(1)
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping")); err != nil {
			os.Exit(1)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// TestNamespacePartitionCutsLinks checks the partition mechanism itself: a
// TCP connect between two namespaces works, fails once they are in
// different groups, still works from a node in no group (a bridge), and
// works again after Heal.
func TestNamespacePartitionCutsLinks(t *testing.T) {
	if !NamespacesAvailable() {
		t.Skip("network namespaces need root and ip(8)")
	}
	nn, err := NewNamespaceNet(3)
	if err != nil {
		t.Fatal(err)
	}
	defer nn.Close()
	addr := net.JoinHostPort(nn.IP(1), "7070")
	argv := nn.Wrap(1, []string{os.Args[0], "-test.run=^TestHelperProcess$"})
	ln := exec.Command(argv[0], argv[1:]...)
	ln.Env = append(os.Environ(), "FAULTS_HELPER=listen", "FAULTS_HELPER_ADDR="+addr)
	if err := childproc.Start(ln); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Process.Kill(); _ = ln.Wait() }()
	dial := func(from int) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		argv := nn.Wrap(from, []string{os.Args[0], "-test.run=^TestHelperProcess$"})
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Env = append(os.Environ(), "FAULTS_HELPER=dial", "FAULTS_HELPER_ADDR="+addr)
		return c.Run() == nil
	}
	// The listener needs a moment to start: poll with a bound.
	deadline := time.Now().Add(20 * time.Second)
	for !dial(0) {
		if time.Now().After(deadline) {
			t.Fatal("node 1 cannot reach node 2 on a healthy network")
		}
	}
	if err := nn.Partition([][]int{{0}, {1}}); err != nil {
		t.Fatal(err)
	}
	if dial(0) {
		t.Fatal("node 1 reaches node 2 across a partition")
	}
	if !dial(2) {
		t.Fatal("bridge node 3 cannot reach node 2")
	}
	if err := nn.Heal(); err != nil {
		t.Fatal(err)
	}
	if !dial(0) {
		t.Fatal("node 1 cannot reach node 2 after Heal")
	}
}
