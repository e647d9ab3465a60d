package broker

import (
	"testing"
	"time"
)

// TestUncleanCheckDue: the periodic unclean elections run one
// unclean.leader.election.interval.ms after this node became the active
// controller and then every interval, as Kafka 4.4's electUnclean task.
func TestUncleanCheckDue(t *testing.T) {
	const interval = 5 * time.Minute
	t0 := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	due, last := uncleanCheckDue(time.Time{}, t0, interval)
	if due || !last.Equal(t0) {
		t.Fatalf("on becoming active: due %v last %v, want not due, last %v", due, last, t0)
	}
	for _, tc := range []struct {
		after time.Duration
		due   bool
	}{{time.Second, false}, {interval - time.Millisecond, false}, {interval, true}, {interval + time.Hour, true}} {
		due, next := uncleanCheckDue(t0, t0.Add(tc.after), interval)
		if due != tc.due {
			t.Errorf("%v after the last check: due %v, want %v", tc.after, due, tc.due)
		}
		if want := map[bool]time.Time{true: t0.Add(tc.after), false: t0}[tc.due]; !next.Equal(want) {
			t.Errorf("%v after the last check: last %v, want %v", tc.after, next, want)
		}
	}
}
