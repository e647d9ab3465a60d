package diff

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerConfigNames are broker settings described by name: the retention
// synonym chain, settings Kafka requires, a per-broker one, secrets, and
// settings samsa accepts without acting on them.
var brokerConfigNames = []string{
	"log.retention.hours", "log.retention.minutes", "log.retention.ms", "log.roll.hours",
	"log.flush.interval.ms", "node.id", "process.roles", "listeners", "broker.id",
	"ssl.keystore.password", "sasl.jaas.config", "background.threads",
	"share.coordinator.state.topic.min.isr", "no.such.config",
}

// scriptBrokerConfigs alters BROKER resources the ways Kafka refuses
// (read-only, per-broker at the cluster-wide level, bad values of settings
// samsa implements and of ones it only accepts) and accepts (a setting
// samsa does not act on, a name Kafka does not know), then describes the
// setting changed at every version.
func scriptBrokerConfigs(s *Session) error {
	incremental := func(name string, validate bool, op kmsg.IncrementalAlterConfigOp, kv ...string) *kmsg.IncrementalAlterConfigsRequest {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validate
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, name
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = kv[i], op, kmsg.StringPtr(kv[i+1])
			if op == kmsg.IncrementalAlterConfigOpDelete {
				c.Value = nil
			}
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		return req
	}
	set := kmsg.IncrementalAlterConfigOpSet
	// Kafka applies a dynamic setting asynchronously, after the metadata
	// commit: the changes go first, and waitBrokerConfig waits for them
	// before the describes.
	s.Do("broker-set-accepted", 1, incremental("1", false, set, "background.threads", "5"))
	s.Do("broker-set-accepted-default", 1, incremental("", false, set, "log.cleaner.threads", "2"))
	// The thread-pool steps below are judged against the pool sizes just
	// set (half to double): wait until Kafka has applied them, or the
	// first version's "broker-accepted" races the change (it answered
	// INVALID_REQUEST once on a loaded machine, session 33).
	if err := s.waitBrokerConfig(30*time.Second, map[string]string{"background.threads": "5", "log.cleaner.threads": "2"}); err != nil {
		return err
	}
	each(kmsg.IncrementalAlterConfigs, func(v int16) {
		s.Do("broker-bad-int", v, incremental("1", true, set, "num.io.threads", "0"))
		s.Do("broker-bad-type-accepted", v, incremental("1", true, set, "background.threads", "many"))
		s.Do("broker-bad-range-accepted", v, incremental("", true, set, "background.threads", "0"))
		s.Do("broker-bad-string", v, incremental("", true, set, "compression.type", "bogus"))
		s.Do("broker-per-broker-at-default", v, incremental("", true, set, "listeners", "PLAINTEXT://127.0.0.1:1"))
		// Listener changes Kafka refuses (DynamicListenerConfig and
		// KafkaConfig's requirements; port-independent, validate only).
		s.Do("broker-listener-no-protocol", v, incremental("1", true, set, "listeners", "OTHER://127.0.0.1:1"))
		s.Do("broker-listener-same-port", v, incremental("1", true, set, "listeners", "EXTRA://127.0.0.1:1,EXTRA2://127.0.0.1:1",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT,EXTRA2:PLAINTEXT"))
		s.Do("broker-listener-protocol-kept", v, incremental("1", true, set, "listener.security.protocol.map", "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"))
		s.Do("broker-read-only-accepted", v, incremental("1", true, set, "background.threads", "4", "num.replica.alter.log.dirs.threads", "2"))
		s.Do("broker-accepted", v, incremental("1", true, set, "background.threads", "4", "log.cleaner.threads", "2"))
		s.Do("broker-unknown-name", v, incremental("1", true, set, "no.such.config", "1"))
		// Eligible leader replicas (KIP-966): a broker's own
		// min.insync.replicas cannot be altered, even deleted while
		// unset, nor the cluster-level one deleted; it can be set.
		s.Do("broker-min-isr-per-broker", v, incremental("1", true, set, "min.insync.replicas", "2"))
		s.Do("broker-min-isr-per-broker-delete", v, incremental("1", true, kmsg.IncrementalAlterConfigOpDelete, "min.insync.replicas", ""))
		s.Do("broker-min-isr-default-delete", v, incremental("", true, kmsg.IncrementalAlterConfigOpDelete, "min.insync.replicas", ""))
		s.Do("broker-min-isr-default-set", v, incremental("", true, set, "min.insync.replicas", "1"))
	})
	each(kmsg.AlterConfigs, func(v int16) {
		broker := kmsg.ConfigResourceTypeBroker
		s.Do("broker-bad-value", v, alterConfigsReq(true, broker, "", "log.cleaner.threads", "-1"))
		// Replacing the cluster level's settings without
		// min.insync.replicas removes it, which ELR refuses; with it,
		// the replacement passes.
		s.Do("broker-default-replace-without-min-isr", v, alterConfigsReq(true, broker, "", "log.cleaner.threads", "2"))
		s.Do("broker-default-replace-with-min-isr", v, alterConfigsReq(true, broker, "", "log.cleaner.threads", "2", "min.insync.replicas", "1"))
	})
	if err := s.waitBrokerConfig(30*time.Second, map[string]string{"background.threads": "5", "log.cleaner.threads": "2"}); err != nil {
		return err
	}
	each(kmsg.DescribeConfigs, func(v int16) {
		s.Do("broker-named-all-kinds", v, describeConfigsReq(v, kmsg.ConfigResourceTypeBroker, "1",
			append([]string{"log.cleaner.threads"}, brokerConfigNames...)...))
	})
	s.Do("broker-default-after-set", 4, describeConfigsReq(4, kmsg.ConfigResourceTypeBroker, "", "log.cleaner.threads"))
	each(kmsg.DescribeConfigs, func(v int16) {
		// Kafka lists its log4j loggers by Java class name; root is the
		// one both brokers have.
		s.Do("broker-logger-root", v, describeConfigsReq(v, kmsg.ConfigResourceTypeBrokerLogger, "1", "root"))
		s.Do("broker-logger-empty-id", v, describeConfigsReq(v, kmsg.ConfigResourceTypeBrokerLogger, ""))
		s.Do("broker-logger-bad-id", v, describeConfigsReq(v, kmsg.ConfigResourceTypeBrokerLogger, "x"))
	})
	logger := func(name string, validate bool, op kmsg.IncrementalAlterConfigOp, value string) *kmsg.IncrementalAlterConfigsRequest {
		req := incremental(name, validate, op, "root", value)
		req.Resources[0].ResourceType = kmsg.ConfigResourceTypeBrokerLogger
		return req
	}
	each(kmsg.IncrementalAlterConfigs, func(v int16) {
		s.Do("broker-logger-set-validate", v, logger("1", true, set, "DEBUG"))
		s.Do("broker-logger-bad-level", v, logger("1", false, set, "debug"))
		s.Do("broker-logger-delete-root", v, logger("1", false, kmsg.IncrementalAlterConfigOpDelete, ""))
		s.Do("broker-logger-append", v, logger("1", false, kmsg.IncrementalAlterConfigOpAppend, "DEBUG"))
		s.Do("broker-logger-empty-id", v, logger("", false, set, "DEBUG"))
	})
	// The level changes and is described; then back to INFO, both brokers'
	// configured level.
	s.Do("broker-logger-set", 1, logger("1", false, set, "WARN"))
	s.Do("broker-logger-after-set", 4, describeConfigsReq(4, kmsg.ConfigResourceTypeBrokerLogger, "1", "root"))
	s.Do("broker-logger-reset", 1, logger("1", false, set, "INFO"))
	s.Do("broker-unset-accepted", 1, incremental("1", false, kmsg.IncrementalAlterConfigOpDelete, "background.threads", ""))
	s.Do("broker-unset-accepted-default", 1, incremental("", false, kmsg.IncrementalAlterConfigOpDelete, "log.cleaner.threads", ""))
	return nil
}

// waitBrokerConfig polls (unrecorded) DescribeConfigs of broker 1 until
// each setting of want has its value.
func (s *Session) waitBrokerConfig(timeout time.Duration, want map[string]string) error {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := s.Quiet(4, describeConfigsReq(4, kmsg.ConfigResourceTypeBroker, "1", names...))
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
			for _, c := range r.Configs {
				got[c.Name] = deref(c.Value)
			}
		}
		done := true
		for n, v := range want {
			done = done && got[n] == v
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: broker configs %v, want %v", ErrDiffTimeout, s.Broker, got, want)
		}
		<-time.After(50 * time.Millisecond)
	}
}
