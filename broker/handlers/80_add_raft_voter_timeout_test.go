package handlers

import (
	"math"
	"testing"
	"time"
)

// TestVoterChangeTimeoutBounded: a voter change waits as long as its
// request's timeout_ms says, but never longer than maxVoterChangeTimeout
// (TestTCPFuzzShort sent an AddRaftVoter of about 24 days).
func TestVoterChangeTimeoutBounded(t *testing.T) {
	for _, c := range []struct {
		ms   int32
		want time.Duration
	}{
		{0, maxVoterChangeTimeout},
		{-1, maxVoterChangeTimeout},
		{1500, 1500 * time.Millisecond},
		{math.MaxInt32, maxVoterChangeTimeout},
	} {
		if got := voterChangeTimeout(c.ms); got != c.want {
			t.Errorf("voterChangeTimeout(%d) = %v, want %v", c.ms, got, c.want)
		}
	}
}
