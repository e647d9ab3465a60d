package quorum

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// TestFailoverTime measures, with Kafka's default election timeout (1 s),
// how long the quorum is without an active controller after the active one
// is cut off (in-memory transport) or killed (TCP on loopback): from the
// fault until another voter accepts writes.
func TestFailoverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("measures failover with 1 s timeouts")
	}
	const rounds = 3
	t.Run("inmem", func(t *testing.T) {
		tc := newTestCluster(t, 3, time.Second, nil)
		var took []time.Duration
		for range rounds {
			old := tc.leader()
			start := time.Now()
			tc.isolate(old.id)
			var rest []int32
			for id := range tc.nodes {
				if id != old.id {
					rest = append(rest, id)
				}
			}
			tc.leader(rest...)
			took = append(took, time.Since(start))
			if took[len(took)-1] > 10*time.Second {
				t.Errorf("failover took %v", took[len(took)-1])
			}
			tc.heal(old.id)
			tc.converged()
		}
		t.Logf("in-memory transport, election timeout 1 s: failover took %v", took)
	})
	t.Run("tcp", func(t *testing.T) {
		tc := newTCPCluster(t, 3, time.Second)
		var took []time.Duration
		for range rounds {
			old := tc.leader()
			start := time.Now()
			tc.kill(old.opts.NodeID)
			tc.leader()
			took = append(took, time.Since(start))
			if took[len(took)-1] > 10*time.Second {
				t.Errorf("failover took %v", took[len(took)-1])
			}
			tc.restart(old.opts.NodeID)
		}
		t.Logf("TCP on loopback, election timeout 1 s: failover after kill took %v", took)
	})
}

// tcpCluster is voters on real controller listeners on 127.0.0.1.
type tcpCluster struct {
	t       *testing.T
	voters  []Voter
	dirs    map[int32]string
	nodes   map[int32]*Quorum
	timeout time.Duration
}

func newTCPCluster(t *testing.T, n int, timeout time.Duration) *tcpCluster {
	tc := &tcpCluster{t: t, dirs: map[int32]string{}, nodes: map[int32]*Quorum{}, timeout: timeout}
	var lns []*Listener
	for i := 1; i <= n; i++ {
		ln, err := Listen("127.0.0.1:0", "", nil, quietLogger)
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		tc.voters = append(tc.voters, Voter{ID: int32(i), Addr: ln.BoundAddr().String()})
		tc.dirs[int32(i)] = t.TempDir()
	}
	for i, ln := range lns {
		tc.open(int32(i+1), ln)
	}
	t.Cleanup(func() {
		for id := range tc.nodes {
			tc.kill(id)
		}
	})
	return tc
}

func (tc *tcpCluster) open(id int32, ln *Listener) {
	q, err := Open(Options{NodeID: id, ClusterID: "c", Dir: tc.dirs[id], Voters: tc.voters, Listener: ln,
		ElectionTimeout: tc.timeout, Logger: testLogger().With("node", id)})
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.nodes[id] = q
}

func (tc *tcpCluster) kill(id int32) {
	if q := tc.nodes[id]; q != nil {
		q.Close()
		delete(tc.nodes, id)
	}
}

func (tc *tcpCluster) restart(id int32) {
	ln, err := Listen(tc.voters[id-1].Addr, "", nil, quietLogger)
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.open(id, ln)
}

func (tc *tcpCluster) leader() *Quorum {
	var l *Quorum
	waitFor(tc.t, 30*time.Second, "an active controller", func() bool {
		l = nil
		count := 0
		for _, q := range tc.nodes {
			if q.Leading() {
				l, count = q, count+1
			}
		}
		return count == 1
	})
	return l
}

// TestTCPQuorum: three voters over real controller listeners replicate a
// batch; a Kafka client connecting to the same port is handed to the
// Kafka side with its first bytes intact.
func TestTCPQuorum(t *testing.T) {
	tc := newTCPCluster(t, 3, testTimeout)
	l := tc.leader()
	recs := []controller.Record{controller.RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 1}}
	if err := l.Propose(-1, recs); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every voter to apply the batch", func() bool {
		for _, q := range tc.nodes {
			if q.Machine().Image().Offset != 0 {
				return false
			}
		}
		return true
	})

	got := make(chan []byte, 1)
	ln, err := Listen("127.0.0.1:0", "", func(c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(bufio.NewReader(c), 8))
		got <- b
	}, quietLogger)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.BoundAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := binary.BigEndian.AppendUint32(nil, 4)
	req = append(req, 0, 18, 0, 3) // ApiVersions v3 header start
	c.Write(req)
	select {
	case b := <-got:
		if !slices.Equal(b, req) {
			t.Fatalf("Kafka side read %x, want %x", b, req)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Kafka connection not handed over")
	}
}
