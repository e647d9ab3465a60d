package config

import (
	"fmt"
	"strconv"
	"strings"
)

// kafkaSetting is the static value of any Kafka broker setting: samsa's
// own value (given or default) for the settings it implements, the given
// value of one it only accepts, else Kafka's default.
func (c *Config) kafkaSetting(name string) string {
	if v, ok := c.Values[name]; ok {
		return v
	}
	if v, ok := c.OtherValues[name]; ok {
		return v
	}
	return kafkaDefs[name].dflt
}

// verifyGroupSettings makes the checks Kafka 4.4's GroupCoordinatorConfig
// makes when a node starts (checkConstraints: verifyConsumerGroupConfigs,
// verifyShareGroupConfigs, verifyStreamsGroupConfigs, read with javap of
// kafka-group-coordinator-4.4.0.jar), in its order and with its wording:
// a node whose group settings contradict each other does not start
// (controllers included). get returns a setting's value (kafkaSetting);
// values were validated by their types already.
func verifyGroupSettings(get func(string) string) error {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(get(name)), 10, 64)
		return n
	}
	var err error
	require := func(ok bool, format string, args ...any) {
		if !ok && err == nil {
			err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
		}
	}
	atLeast := func(a, b string) { require(num(a) >= num(b), "%s must be greater than or equal to %s", a, b) }
	atMost := func(a, b string) { require(num(a) <= num(b), "%s must be less than or equal to %s", a, b) }
	timeouts := func(kind string) {
		p := "group." + kind + "."
		atLeast(p+"max.heartbeat.interval.ms", p+"min.heartbeat.interval.ms")
		atLeast(p+"heartbeat.interval.ms", p+"min.heartbeat.interval.ms")
		atMost(p+"heartbeat.interval.ms", p+"max.heartbeat.interval.ms")
		atLeast(p+"max.session.timeout.ms", p+"min.session.timeout.ms")
		atLeast(p+"session.timeout.ms", p+"min.session.timeout.ms")
		atMost(p+"session.timeout.ms", p+"max.session.timeout.ms")
		require(num(p+"heartbeat.interval.ms") < num(p+"session.timeout.ms"), "%s must be less than %s", p+"heartbeat.interval.ms", p+"session.timeout.ms")
	}
	assignmentInterval := func(kind string) {
		p := "group." + kind + "."
		atLeast(p+"max.assignment.interval.ms", p+"min.assignment.interval.ms")
		atLeast(p+"assignment.interval.ms", p+"min.assignment.interval.ms")
		atMost(p+"assignment.interval.ms", p+"max.assignment.interval.ms")
	}

	timeouts("consumer")
	assignmentInterval("consumer")

	timeouts("share")
	if n := len(parseList(get("group.share.assignors"))); n != 1 {
		require(false, "%s must contain exactly one assignor, but found %d", "group.share.assignors", n)
	}
	assignmentInterval("share")

	timeouts("streams")
	assignmentInterval("streams")
	atMost("group.streams.num.standby.replicas", "group.streams.max.standby.replicas")
	atLeast("group.streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms")
	atMost("group.streams.num.warmup.replicas", "group.streams.max.warmup.replicas")
	seen := map[string]bool{}
	for _, tag := range parseList(get("group.streams.rack.aware.assignment.tags")) {
		require(!seen[tag], "%s must not contain duplicate tag keys.", "group.streams.rack.aware.assignment.tags")
		seen[tag] = true
	}
	return err
}
