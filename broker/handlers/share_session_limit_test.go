package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/broker/share"
)

// TestShareSessionLimitWaits: samsa answered SHARE_SESSION_LIMIT_REACHED
// at once, so a client retrying at once spun against a full session
// cache; Kafka 4.4 answers it after the request's MaxWaitMs (and at once
// without one).
func TestShareSessionLimitWaits(t *testing.T) {
	e := newShareEnv(t)
	m := share.NewManager(share.Options{Persister: e.p, MaxShareSessions: 1})
	t.Cleanup(m.Close)
	e.d.Shares = m
	if resp := e.fetch(t, 2, "a", 0, 0); resp.ErrorCode != 0 {
		t.Fatalf("first session: %d", resp.ErrorCode)
	}
	start := time.Now()
	resp := e.fetch(t, 2, "b", 0, 400)
	if resp.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("second session: %d, want SHARE_SESSION_LIMIT_REACHED", resp.ErrorCode)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("SHARE_SESSION_LIMIT_REACHED after %v, want after MaxWaitMs 400 ms", waited)
	}
	if resp.AcquisitionLockTimeoutMillis != 0 || len(resp.Topics) != 0 {
		t.Fatalf("error response carries %d ms, %d topics", resp.AcquisitionLockTimeoutMillis, len(resp.Topics))
	}
	if resp := e.fetch(t, 2, "b", 0, 0); resp.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("second session without MaxWaitMs: %d", resp.ErrorCode)
	}
}
