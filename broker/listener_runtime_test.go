package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/harness/testcerts"
)

// TestRuntimeListeners: listeners added and removed with AlterConfigs at
// runtime, as Kafka 4.4 does (kafka-ref, session 33). On node 1 of a
// three-node cluster, kadm adds a PLAINTEXT, a SASL_PLAINTEXT (PLAIN users
// in the listener's JAAS configuration, given in the same request) and an
// SSL listener (its PEM keystore given in the same request): franz-go
// clients reach each at once (a wrong password is refused). A new address
// for the PLAINTEXT one leaves its socket alone; removing it closes its
// port and the connection open on it. Meanwhile a
// producer writes acks=all to a topic replicated on the three nodes
// through node 2, and every record it got acknowledged is read back at
// the end with the three replicas in sync. The registration does not
// change (Kafka 4.4 never re-registers for a listener change). Node 1
// restarted serves the listeners the stored change names, the removed one
// not.
func TestRuntimeListeners(t *testing.T) {
	c := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca := testcerts.NewCA("samsa test CA")
	srv := ca.Server("localhost", "127.0.0.1")
	keystore := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(keystore, append(srv.CertPEM, srv.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	// Ports below the ephemeral range (bound again after the restart).
	ports := harness.FreePorts(t, 4)
	extra, saslx, secure := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1]), fmt.Sprintf("127.0.0.1:%d", ports[2])
	moved := fmt.Sprintf("127.0.0.1:%d", ports[3])

	// A topic on the three nodes and a producer through node 2 while the
	// listeners of node 1 change.
	adm := newClusterAdmin(t, c.addr(1))
	const topic = "runtime-listeners"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(c.addr(1)), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var acked atomic.Int64
	var produceErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
				produceErr.Store(err)
				return
			}
			acked.Add(1)
		}
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	current := func() string {
		cfg := c.nodes[0].cfg
		var ls []string
		for _, l := range cfg.Listeners {
			ls = append(ls, l.String())
		}
		return strings.Join(ls, ",")
	}()
	alter := func(kv ...string) error {
		var ops []kadm.AlterConfig
		for i := 0; i+1 < len(kv); i += 2 {
			ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[i], Value: kmsg.StringPtr(kv[i+1])})
		}
		rs, err := newClusterAdmin(t, c.addr(0)).AlterBrokerConfigs(ctx, ops, 1)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
		return nil
	}
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`
	before := acked.Load()
	if err := alter(
		"listeners", current+",EXTRA://"+extra+",SASLX://"+saslx+",SECURE://"+secure,
		"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT,SASLX:SASL_PLAINTEXT,SECURE:SSL",
		"listener.name.saslx.sasl.enabled.mechanisms", "PLAIN",
		"listener.name.saslx.plain.sasl.jaas.config", jaas,
		"listener.name.secure.ssl.keystore.type", "PEM",
		"listener.name.secure.ssl.keystore.location", keystore,
	); err != nil {
		t.Fatalf("adding listeners: %v", err)
	}
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	clients := map[string][]kgo.Opt{
		"EXTRA":  {kgo.SeedBrokers(extra)},
		"SASLX":  {kgo.SeedBrokers(saslx), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())},
		"SECURE": {kgo.SeedBrokers(secure), kgo.DialTLSConfig(tlsCfg)},
	}
	for name, opts := range clients {
		var last error
		if !poll(30*time.Second, func() bool { last = describeCluster(ctx, opts...); return last == nil }) {
			t.Fatalf("listener %s added at runtime: %v", name, last)
		}
	}
	if err := describeCluster(ctx, kgo.SeedBrokers(saslx), kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password on the runtime SASL listener: %v", err)
	}
	if err := describeCluster(ctx, kgo.SeedBrokers(secure)); err == nil {
		t.Error("a plaintext client was served on the runtime SSL listener")
	}

	// EXTRA kept under its name with another address keeps its socket,
	// as in Kafka (reconfigure compares names only).
	reconciles := c.nodes[0].listenerReconciles.Load()
	if err := alter("listeners", current+",EXTRA://"+moved+",SASLX://"+saslx+",SECURE://"+secure); err != nil {
		t.Fatalf("moving EXTRA: %v", err)
	}
	if !poll(30*time.Second, func() bool {
		return strings.Contains(c.nodes[0].ctrl.Image().BrokerConfigs["1"]["listeners"], moved) && c.nodes[0].listenerReconciles.Load() > reconciles
	}) {
		t.Fatal("node 1 did not reconcile its listeners after the change")
	}
	if err := describeCluster(ctx, clients["EXTRA"]...); err != nil {
		t.Errorf("EXTRA after its address changed: %v", err)
	}
	if nc, err := net.DialTimeout("tcp", moved, time.Second); err == nil {
		nc.Close()
		t.Error("EXTRA's new address was bound")
	}

	// A connection open on EXTRA is closed when EXTRA goes.
	conn, err := net.Dial("tcp", extra)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(apiVersionsFrame()); err != nil {
		t.Fatal(err)
	}
	if _, err := readFrame(conn); err != nil {
		t.Fatalf("ApiVersions on EXTRA: %v", err)
	}
	if err := alter("listeners", current+",SASLX://"+saslx+",SECURE://"+secure); err != nil {
		t.Fatalf("removing EXTRA: %v", err)
	}
	if b, err := readFrame(conn); err == nil {
		t.Fatalf("the connection on the removed listener answered %d bytes", len(b))
	} else if ne := (net.Error)(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection on the removed listener stayed open")
	}
	if !poll(10*time.Second, func() bool {
		nc, err := net.DialTimeout("tcp", extra, time.Second)
		if err == nil {
			nc.Close()
		}
		return err != nil
	}) {
		t.Fatal("the removed listener still accepts connections")
	}
	if err := describeCluster(ctx, clients["SASLX"]...); err != nil {
		t.Errorf("SASLX after EXTRA went: %v", err)
	}

	// Kafka 4.4 keeps the registration: Metadata advertises node 1's
	// PLAINTEXT listener only.
	for _, b := range c.nodes[1].ctrl.Image().Brokers {
		if b.ID == 1 && (len(b.Listeners) != 1 || b.Listeners[0].Name != "PLAINTEXT") {
			t.Errorf("node 1 registered %+v", b.Listeners)
		}
	}

	// Replication went on meanwhile.
	if !poll(30*time.Second, func() bool { return acked.Load() > before+20 || produceErr.Load() != nil }) {
		t.Fatalf("production stalled: %d acknowledged since the change", acked.Load()-before)
	}
	if err := produceErr.Load(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// A restart keeps the change: SASLX and SECURE served, EXTRA not.
	c.stop(0)
	if c.nodes[0], err = c.startNode(0); err != nil {
		t.Fatalf("restarting node 1: %v", err)
	}
	for _, name := range []string{"SASLX", "SECURE"} {
		var last error
		if !poll(30*time.Second, func() bool { last = describeCluster(ctx, clients[name]...); return last == nil }) {
			t.Fatalf("listener %s after a restart: %v", name, last)
		}
	}
	if nc, err := net.DialTimeout("tcp", extra, time.Second); err == nil {
		nc.Close()
		t.Error("the removed listener is bound again after a restart")
	}
	close(stop)
	wg.Wait()
	if err, _ := produceErr.Load().(error); err != nil {
		t.Logf("producer while node 1 restarted: %v", err)
	}
	total := acked.Load()

	// Every acknowledged record is there, the three replicas in sync.
	if !poll(60*time.Second, func() bool {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return false
		}
		p := td[topic].Partitions[0]
		return len(p.ISR) == 3
	}) {
		t.Fatal("the ISR did not come back to three replicas")
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.addr(2)), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	for int64(len(seen)) < total {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d acknowledged records", len(seen), total)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for i := range total {
		if !seen[fmt.Sprintf("r%d", i)] {
			t.Fatalf("acknowledged record r%d lost", i)
		}
	}
	t.Logf("%d records acknowledged and read back", total)
}

// describeCluster sends one DescribeCluster by a client built from opts
// (a failed authentication is not retried by franz-go).
func describeCluster(ctx context.Context, opts ...kgo.Opt) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}
