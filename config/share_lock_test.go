package config

import (
	"strings"
	"testing"
)

// TestShareRecordLockBounds: Kafka 4.4 does not start when the share
// record lock duration lies outside group.share.min/max.record.lock.duration.ms
// (15 s and 60 s by default) or when a broker keeps fewer share sessions
// than a share group may have members; samsa started with a 1 s lock.
func TestShareRecordLockBounds(t *testing.T) {
	c := mustLoad(t, []string{"--override", "group.share.min.record.lock.duration.ms=1000", "--override", "group.share.record.lock.duration.ms=2000"}, nil)
	if c.GroupShareRecordLockDurationMs != 2000 {
		t.Fatalf("lock %d with the minimum lowered", c.GroupShareRecordLockDurationMs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"group.share.record.lock.duration.ms=1000"}, "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{[]string{"group.share.record.lock.duration.ms=90000"}, "group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms"},
		{[]string{"group.share.max.share.sessions=100"}, "group.share.max.share.sessions must be greater than or equal to group.share.max.size"},
		{[]string{"group.share.min.record.lock.duration.ms=999"}, "group.share.min.record.lock.duration.ms"},
		{[]string{"group.share.max.record.lock.duration.ms=29999"}, "group.share.max.record.lock.duration.ms"},
	} {
		var args []string
		for _, a := range tc.args {
			args = append(args, "--override", a)
		}
		_, err := Load(args, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error containing %q", tc.args, err, tc.want)
		}
	}
}
