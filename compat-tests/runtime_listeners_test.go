package compattests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// TestRuntimeListenersKafkaConfigs adds a SASL_PLAINTEXT listener to a running
// broker with Kafka 4.4's kafka-configs tool (its JAAS configuration first, with
// --add-config-file, then listeners, listener.security.protocol.map and the
// listener's sasl.enabled.mechanisms) and removes it again, against the samsa
// binary and against Kafka 4.4: on both the new port logs PLAIN users in at once
// (a wrong password is SASL_AUTHENTICATION_FAILED), and once the listener is
// removed the port refuses connections.
func TestRuntimeListenersKafkaConfigs(t *testing.T) {
	t.Parallel()
	kafkaref.Require(t)
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		b := harness.Start(t, harness.Options{ControllerListener: true})
		runtimeListenerScenario(t, b.Addr)
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{})
		runtimeListenerScenario(t, k.Bootstrap())
	})
}

func runtimeListenerScenario(t *testing.T, bootstrap string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var listeners, protocols string
	if !pollUntil(60*time.Second, func() bool {
		rs, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil || len(rs) == 0 || rs[0].Err != nil {
			return false
		}
		for _, c := range rs[0].Configs {
			switch c.Key {
			case "listeners":
				listeners = c.MaybeValue()
			case "listener.security.protocol.map":
				protocols = c.MaybeValue()
			}
		}
		return listeners != "" && protocols != ""
	}) {
		t.Fatal("no listeners described")
	}
	port := harness.FreePorts(t, 1)[0]
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	configs := func(args ...string) {
		t.Helper()
		cmd := kafkaref.Tool(t, "kafka-configs", append([]string{"--bootstrap-server", bootstrap, "--entity-type", "brokers", "--entity-name", "1", "--alter"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Completed updating config for broker 1.") {
			t.Fatalf("kafka-configs %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	props := filepath.Join(t.TempDir(), "saslx.properties")
	jaas := `listener.name.saslx.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";` + "\n"
	if err := os.WriteFile(props, []byte(jaas), 0o600); err != nil {
		t.Fatal(err)
	}
	configs("--add-config-file", props)
	configs("--add-config", fmt.Sprintf("listeners=[%s,SASLX://%s],listener.security.protocol.map=[%s,SASLX:SASL_PLAINTEXT],listener.name.saslx.sasl.enabled.mechanisms=PLAIN",
		listeners, addr, protocols))
	login := func(pass string) error {
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		defer lcancel()
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: pass}.AsMechanism()), kgo.RequestRetries(0))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(lctx, c)
		return err
	}
	var last error
	if !pollUntil(60*time.Second, func() bool { last = login("alice-secret"); return last == nil }) {
		t.Fatalf("PLAIN login on the listener added at runtime: %v", last)
	}
	if err := login("wrong"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	configs("--add-config", fmt.Sprintf("listeners=[%s]", listeners))
	if !pollUntil(60*time.Second, func() bool {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
		}
		return err != nil
	}) {
		t.Fatal("the removed listener still accepts connections")
	}
}
