package handlers

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/samsa-broker/samsa/config"
)

// Kafka's checks of a dynamic broker setting against the broker's current
// value, which the setting's own validator cannot make. Kafka runs them
// when its components validate a reconfiguration (DynamicThreadPool,
// LogCleaner); samsa does not resize anything at runtime but answers the
// same, so that a change Kafka would refuse is refused here too.

// threadPoolSettings are resized by Kafka's DynamicThreadPool: a new size
// must be at least 1, at least half the current one and at most double.
var threadPoolSettings = map[string]bool{
	"num.io.threads": true, "num.network.threads": true, "num.replica.fetchers": true,
	"num.recovery.threads.per.data.dir": true, "background.threads": true,
}

// effective returns the value of broker setting name on this node: its
// per-broker dynamic value, else the cluster-wide one, else the static
// one, else its default.
func (b brokerLevels) effective(name string) (string, bool) {
	if v, ok := b.perBroker[name]; ok {
		return v, true
	}
	if v, ok := b.clusterWD[name]; ok {
		return v, true
	}
	if v, ok := b.static(name); ok {
		return v, true
	}
	if def, ok := config.BrokerDef(name); ok && def.HasDefault {
		return def.Default, true
	}
	return "", false
}

// reconfigurationRefusal returns why Kafka would refuse the new values of
// configs on this node, or "": thread pools resized beyond half or double
// their current size, log.cleaner.threads above double its current value
// or below 1, log.cleaner.dedupe.buffer.size below 1 MiB per cleaner
// thread. Values that do not parse are left to the validators.
func reconfigurationRefusal(levels brokerLevels, configs map[string]string) string {
	current := func(name string) (int64, bool) {
		v, ok := levels.effective(name)
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	for _, name := range sortedConfigNames(configs) {
		n, err := strconv.ParseInt(strings.TrimSpace(configs[name]), 10, 64)
		if err != nil {
			continue
		}
		old, ok := current(name)
		if !ok || n == old {
			continue
		}
		switch {
		case threadPoolSettings[name] && n <= 0:
			return fmt.Sprintf("Dynamic thread count update validation failed for %s=%d, value should be at least 1", name, n)
		case threadPoolSettings[name] && n < old/2:
			return fmt.Sprintf("Dynamic thread count update validation failed for %s=%d, value should be at least half the current value %d", name, n, old)
		case threadPoolSettings[name] && n > old*2:
			return fmt.Sprintf("Dynamic thread count update validation failed for %s=%d, value should not be greater than double the current value %d", name, n, old)
		case name == "log.cleaner.threads" && n < 1:
			// Kafka fails this with a division by zero.
			return "log.cleaner.threads must be at least 1 at runtime"
		case name == "log.cleaner.threads" && n > old*2:
			return fmt.Sprintf("Log cleaner threads cannot be increased to more than double the current value %d", old)
		}
	}
	threads, ok := current("log.cleaner.threads")
	if v, set := configs["log.cleaner.threads"]; set {
		threads, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	if v, set := configs["log.cleaner.dedupe.buffer.size"]; set && ok && threads > 0 {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n/threads < 1024*1024 {
			return "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
		}
	}
	return ""
}
