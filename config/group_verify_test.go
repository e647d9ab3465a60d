package config

import (
	"errors"
	"strings"
	"testing"
)

// TestGroupSettingsChecked: Kafka 4.4 does not start a node whose group
// settings contradict each other (GroupCoordinatorConfig.checkConstraints,
// javap of kafka-group-coordinator-4.4.0.jar); the first failed check is
// the message, in Kafka's wording. Consistent settings load.
func TestGroupSettingsChecked(t *testing.T) {
	c := mustLoad(t, []string{
		"--override", "group.streams.min.session.timeout.ms=10000",
		"--override", "group.streams.session.timeout.ms=10000",
		"--override", "group.streams.min.heartbeat.interval.ms=1000",
		"--override", "group.streams.heartbeat.interval.ms=1000",
		"--override", "group.streams.max.standby.replicas=3",
		"--override", "group.streams.num.standby.replicas=3",
	}, nil)
	if c.GroupStreamsMinSessionTimeoutMs != 10000 || c.GroupStreamsSessionTimeoutMs != 10000 || c.GroupStreamsMinHeartbeatMs != 1000 ||
		c.GroupStreamsMaxSessionTimeoutMs != 60000 || c.GroupStreamsMaxHeartbeatMs != 15000 || c.GroupStreamsMaxStandbyReplicas != 3 {
		t.Fatalf("streams bounds %+v", c)
	}
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"group.streams.session.timeout.ms=10000"},
			want: "group.streams.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms"},
		{env: []string{"KAFKA_GROUP_STREAMS_SESSION_TIMEOUT_MS=61000"},
			want: "group.streams.session.timeout.ms must be less than or equal to group.streams.max.session.timeout.ms"},
		{args: []string{"group.streams.max.session.timeout.ms=40000"},
			want: "group.streams.max.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms"},
		{args: []string{"group.streams.heartbeat.interval.ms=4000"},
			want: "group.streams.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms"},
		{args: []string{"group.streams.max.heartbeat.interval.ms=4000"},
			want: "group.streams.max.heartbeat.interval.ms must be greater than or equal to group.streams.min.heartbeat.interval.ms"},
		{args: []string{"group.streams.num.standby.replicas=3"},
			want: "group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"},
		// Kafka settings samsa accepts without acting on them are checked
		// with the same rules.
		{args: []string{"group.streams.task.offset.interval.ms=1000"},
			want: "group.streams.task.offset.interval.ms must be greater than or equal to group.streams.min.task.offset.interval.ms"},
		{args: []string{"group.streams.num.warmup.replicas=21"},
			want: "group.streams.num.warmup.replicas must be less than or equal to group.streams.max.warmup.replicas"},
		{args: []string{"group.streams.rack.aware.assignment.tags=zone,rack,zone"},
			want: "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys."},
		{args: []string{"group.streams.assignment.interval.ms=20000"},
			want: "group.streams.assignment.interval.ms must be less than or equal to group.streams.max.assignment.interval.ms"},
		{args: []string{"group.consumer.session.timeout.ms=6000"},
			want: "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{args: []string{"group.consumer.min.session.timeout.ms=1000", "group.consumer.session.timeout.ms=5000"},
			want: "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"},
		{args: []string{"group.consumer.min.assignment.interval.ms=2000"},
			want: "group.consumer.assignment.interval.ms must be greater than or equal to group.consumer.min.assignment.interval.ms"},
		{args: []string{"group.share.heartbeat.interval.ms=20000"},
			want: "group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"},
		{args: []string{"group.share.assignors=simple,other"},
			want: "group.share.assignors must contain exactly one assignor, but found 2"},
	} {
		var args []string
		for _, a := range tc.args {
			args = append(args, "--override", a)
		}
		_, err := Load(args, tc.env)
		if !errors.Is(err, ErrInvalid) || !strings.HasSuffix(err.Error(), ": "+tc.want) {
			t.Errorf("%v %v: %v; want an error ending in %q", tc.args, tc.env, err, tc.want)
		}
	}
}
