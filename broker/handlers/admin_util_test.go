package handlers

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// adminEnv is a single node (id 1) with a real config, controller (over a
// MemLog) and storage manager in a temporary directory.
type adminEnv struct {
	d   *Deps
	dir string
}

func adminTestRand() io.Reader {
	var seed [32]byte
	seed[0] = 7
	return rand.NewChaCha8(seed)
}

// newAdminEnv builds the node; overrides are --override key=value settings.
func newAdminEnv(t *testing.T, overrides ...string) *adminEnv {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--override", "log.dirs=" + dir}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	cfg, err := config.Load(args, nil)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	logs, err := storage.OpenManager(storage.ManagerOptions{Dirs: cfg.LogDirs, Now: time.Now})
	if err != nil {
		t.Fatalf("storage.OpenManager: %v", err)
	}
	t.Cleanup(func() { logs.Close() })
	// The replica manager follows the controller's images, as in the
	// broker (broker.LogSyncer calls Apply after creating logs; here the
	// tests create the logs, and Lookup hosts a partition whose log
	// appeared after its image).
	var ctrl *controller.Controller
	replicas := replica.NewManager(replica.Options{NodeID: cfg.NodeID, Logs: logs,
		ISR:               replica.LocalISRChanger{Controller: func() *controller.Controller { return ctrl }},
		MinInsyncReplicas: func(t *controller.Topic) int { return int(cfg.TopicConfig(t.Configs).MinInsyncReplicas) }})
	t.Cleanup(replicas.Close)
	ctrl, err = controller.New(controller.Options{
		NodeID:                   cfg.NodeID,
		ClusterID:                "admin-test-cluster",
		Log:                      controller.NewMemLog(),
		Rand:                     adminTestRand(),
		Logger:                   slog.New(slog.DiscardHandler),
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		OnChange:                 replicas.Apply,
		ValidateTopicConfig: func(m map[string]string) (int16, string) {
			if err := config.ValidateTopicConfig(m); err != nil {
				var ce *config.ConfigError
				if errors.As(err, &ce) {
					return ce.Code, ce.Message
				}
				return 40, err.Error()
			}
			return 0, ""
		},
	})
	if err != nil {
		t.Fatalf("controller.New: %v", err)
	}
	if err := ctrl.RegisterBroker(controller.Broker{ID: cfg.NodeID, Host: "localhost", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	d := &Deps{Config: cfg, Controller: ctrl, Logs: logs, Replicas: replicas, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	return &adminEnv{d: d, dir: dir}
}

// call sends req at version v through the wire encoding and the dispatch
// table, and returns the response decoded back from its wire form, so
// every test also checks that the response encodes at that version.
func (e *adminEnv) call(t *testing.T, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	decoded := kmsg.RequestForKey(req.Key())
	decoded.SetVersion(v)
	if err := decoded.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("decoding request v%d: %v", v, err)
	}
	var handle Handler
	for _, entry := range Table() {
		if entry.Key == req.Key() {
			if v < entry.MinVersion || v > entry.MaxVersion {
				t.Fatalf("version %d outside table range %d-%d", v, entry.MinVersion, entry.MaxVersion)
			}
			handle = entry.Handle
		}
	}
	if handle == nil {
		t.Fatalf("no handler for key %d", req.Key())
	}
	resp, err := handle(e.d, &Request{Header: wire.RequestHeader{APIKey: req.Key(), APIVersion: v}, Body: decoded})
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	resp.SetVersion(v)
	back := decoded.ResponseKind()
	back.SetVersion(v)
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("decoding response v%d: %v", v, err)
	}
	return back
}

// createTopic creates a topic through the controller and fails the test on error.
func (e *adminEnv) createTopic(t *testing.T, name string, partitions int32, configs map[string]string) controller.Uuid {
	t.Helper()
	res := e.d.Controller.CreateTopics([]controller.CreateTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: 1, Configs: configs}}, false)
	if len(res) != 1 || res[0].ErrorCode != 0 {
		t.Fatalf("create %s: %+v", name, res)
	}
	return res[0].ID
}

func strp(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestAdminErrorMessage(t *testing.T) {
	if adminErrorMessage(0, "x") != nil {
		t.Fatal("success must have a null message")
	}
	if got := deref(adminErrorMessage(3, "")); got != "This server does not host this topic-partition." {
		t.Fatalf("fallback = %q", got)
	}
	if got := deref(adminErrorMessage(3, "custom")); got != "custom" {
		t.Fatalf("message = %q", got)
	}
}

func TestClusterAuthorizedOperations(t *testing.T) {
	// CREATE(5) ALTER(7) DESCRIBE(8) CLUSTER_ACTION(9) DESCRIBE_CONFIGS(10)
	// ALTER_CONFIGS(11) IDEMPOTENT_WRITE(12)
	want := int32(1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12)
	if got := clusterAuthorizedOperations(); got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
}

// TestValidateDynamicBrokerConfigs pins the answers Kafka 4.4 gives to
// IncrementalAlterConfigs of a BROKER resource (asked of the real broker
// with validate_only): every refusal is INVALID_REQUEST (42), checked in
// Kafka's order.
func TestValidateDynamicBrokerConfigs(t *testing.T) {
	for _, tc := range []struct {
		configs   map[string]string
		perBroker bool
		code      int16
		msg       string
	}{
		{map[string]string{"log.segment.bytes": "2000000"}, false, 0, ""},
		{map[string]string{"some.plugin.setting": "x"}, false, 0, ""},
		{map[string]string{"node.id": "3", "log.dirs": "/x", "log.segment.bytes": "2000000"}, true, 42, "Cannot update these configs dynamically: [log.dirs, node.id]"},
		{map[string]string{"log.segment.bytes": "nope"}, false, 42, ""},
		// Settings samsa accepts without acting on them are validated
		// with Kafka's validators.
		{map[string]string{"background.threads": "0"}, false, 42, "Invalid value 0 for configuration background.threads: value must be at least 1"},
		{map[string]string{"background.threads": "4"}, false, 0, ""},
		{map[string]string{"log.dirs": "/x", "ssl.keystore.location": "/x"}, false, 42, "Cannot update these configs dynamically: [log.dirs]"},
		{map[string]string{"ssl.keystore.location": "/x"}, true, 42, "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{map[string]string{"listeners": "PLAINTEXT://:1"}, false, 42, "Cannot update these configs at default cluster level, broker id must be specified: [listeners]"},
		{map[string]string{"sasl.jaas.config": "x"}, false, 42, "Cannot update these configs at default cluster level, broker id must be specified: [sasl.jaas.config]"},
		{map[string]string{"listener.name.ssl.ssl.keystore.location": "/x"}, false, 42, "Cannot update these configs at default cluster level, broker id must be specified: [listener.name.ssl.ssl.keystore.location]"},
		{map[string]string{"listener.name.ssl.ssl.keystore.location": "/x"}, true, 0, ""},
		{map[string]string{"compression.type": "bogus"}, false, 42, ""},
		{map[string]string{"max.connections": "-5"}, true, 42, ""},
	} {
		code, msg := validateDynamicBrokerConfigs(tc.configs, tc.perBroker)
		if code != tc.code || (tc.msg != "" && msg != tc.msg) {
			t.Errorf("%v: got %d %q, want %d %q", tc.configs, code, msg, tc.code, tc.msg)
		}
	}
}

func TestListOpAsSet(t *testing.T) {
	for _, tc := range []struct {
		op   kmsg.IncrementalAlterConfigOp
		base *string
		val  string
		want string
	}{
		{kmsg.IncrementalAlterConfigOpAppend, strp("delete"), "compact", "delete,compact"},
		{kmsg.IncrementalAlterConfigOpAppend, strp("delete"), "delete", "delete"},
		{kmsg.IncrementalAlterConfigOpAppend, nil, "a,b", "a,b"},
		{kmsg.IncrementalAlterConfigOpSubtract, strp("delete,compact"), "delete", "compact"},
		{kmsg.IncrementalAlterConfigOpSubtract, strp("delete"), "x", "delete"},
	} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "k", tc.op, strp(tc.val)
		op := listOpAsSet(c, tc.base)
		if op.Op != controller.OpSet || deref(op.Value) != tc.want {
			t.Errorf("%v %v %q: got %v %q, want %q", tc.op, deref(tc.base), tc.val, op.Op, deref(op.Value), tc.want)
		}
	}
}
