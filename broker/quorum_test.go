package broker

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// TestNodeImportsMetadataLog: a data dir written by a single-node build
// (metadata.log, no Raft state) keeps its topics: the log is imported into
// the quorum of one on first start and renamed, and a second start reads
// the quorum alone.
func TestNodeImportsMetadataLog(t *testing.T) {
	dir := t.TempDir()
	metaDir := filepath.Join(dir, "__samsa_metadata")
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(metaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := controller.OpenFileLog(filepath.Join(metaDir, "metadata.log"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Options{NodeID: 1, Log: log, Logger: slog.New(slog.DiscardHandler), DefaultPartitions: 1, DefaultReplicationFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterBroker(controller.Broker{ID: 1, Host: "localhost", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	if res := c.CreateTopics([]controller.CreateTopic{{Name: "old", NumPartitions: 2, ReplicationFactor: 1}}, false); res[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", res[0])
	}
	oldID := c.Image().Topics["old"].ID
	log.Close()

	for start := range 2 {
		n := startTestNode(t, dir)
		tp := n.Controller().Image().Topics["old"]
		if tp == nil || tp.ID != oldID || len(tp.Partitions) != 2 {
			t.Fatalf("start %d: topic old %+v, want id %s with 2 partitions", start, tp, oldID)
		}
		if _, err := os.Stat(filepath.Join(metaDir, "metadata.log")); !os.IsNotExist(err) {
			t.Fatalf("start %d: metadata.log still there (%v)", start, err)
		}
		if _, err := os.Stat(filepath.Join(metaDir, "metadata.log.imported")); err != nil {
			t.Fatalf("start %d: no backup: %v", start, err)
		}
		closeTestNode(t, n)
	}
}

// TestNodeRefusesOtherVoters: bootstrap servers naming other nodes
// without a voter list (a dynamic quorum) are never ignored: the node
// joins their quorum (it needs a controller listener with a port for
// that, else it refuses to start) and never forms a one-node cluster of
// its own (TestJoinControllerQuorum, controller/quorum
// TestAddFourthVoter). (A voter list naming other nodes forms a cluster
// with them: TestThreeNodeCluster.)
func TestNodeRefusesOtherVoters(t *testing.T) {
	for _, tc := range []struct {
		overrides []string
		want      string
	}{
		{[]string{"controller.quorum.bootstrap.servers=other:9093"}, "needs a controller listener ([CONTROLLER]) with a port"},
		{[]string{"process.roles=broker"}, "a broker-only node needs controller.quorum.voters"},
		{[]string{"process.roles=broker", "controller.quorum.voters=2@other:9093"}, "advertised listener PLAINTEXT needs a port"},
		// Bootstrap servers alone are enough for a broker-only node
		// (issue 13 item 1): it gets past the quorum settings.
		{[]string{"process.roles=broker", "controller.quorum.bootstrap.servers=other:9093"}, "advertised listener PLAINTEXT needs a port"},
	} {
		args := []string{"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "--override", "controller.listener.names=CONTROLLER",
			"--override", "log.dirs=" + t.TempDir()}
		for _, o := range tc.overrides {
			args = append(args, "--override", o)
		}
		cfg, err := config.Load(args, nil)
		if err != nil {
			t.Fatal(err)
		}
		n, err := StartNode(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			closeTestNode(t, n)
			t.Fatalf("%v: node started", tc.overrides)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.overrides, err, tc.want)
		}
	}
	// Kafka's own single-node server.properties: bootstrap servers naming
	// this node's controller listener are a quorum of one.
	n := startTestNode(t, t.TempDir(), "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://localhost:19093", "controller.listener.names=CONTROLLER",
		"controller.quorum.bootstrap.servers=localhost:19093")
	closeTestNode(t, n)
}
