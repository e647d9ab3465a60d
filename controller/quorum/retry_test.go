package quorum

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// flakyTransport fails its first fail AppendEntries calls and counts them
// all; the rest of raft.Transport is not used by these tests.
type flakyTransport struct {
	raft.Transport
	fail  int64
	calls atomic.Int64
}

var errCutOff = errors.New("test: peer unreachable")

func (f *flakyTransport) AppendEntries(_ raft.ServerID, _ raft.ServerAddress, _ *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if f.calls.Add(1) <= f.fail {
		return errCutOff
	}
	resp.Term, resp.Success, resp.LastLog = 3, true, 7
	return nil
}

func retryingTransport(inner raft.Transport, halt <-chan struct{}, retryFor time.Duration) *trackingTransport {
	return &trackingTransport{Transport: inner, progress: &progressTracker{peers: map[raft.ServerID]peerProgress{}},
		halt: halt, retryEvery: time.Millisecond, retryFor: retryFor}
}

// replication is a replication request as hashicorp/raft sends it to a
// follower it is catching up: entries after the previous one, and the
// commit index.
var replication = raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 5, PrevLogTerm: 2, LeaderCommitIndex: 5,
	Entries: []*raft.Log{{Index: 6, Term: 3}, {Index: 7, Term: 3}}}

// TestReplicationRetriedUntilThePeerAnswers: a replication request that
// fails is sent again by the transport until the follower answers, so
// that hashicorp/raft's backoff before its own next attempt (up to 10 s)
// does not grow while a node is cut off (finding 16).
func TestReplicationRetriedUntilThePeerAnswers(t *testing.T) {
	for _, req := range []raft.AppendEntriesRequest{
		replication,
		{Term: 3, PrevLogEntry: 7, PrevLogTerm: 3, LeaderCommitIndex: 7}, // nothing new: commit index only
	} {
		inner := &flakyTransport{fail: 5}
		tr := retryingTransport(inner, make(chan struct{}), time.Hour)
		var resp raft.AppendEntriesResponse
		if err := tr.AppendEntries("2", "127.0.0.1:1", &req, &resp); err != nil {
			t.Fatalf("AppendEntries: %v after %d calls", err, inner.calls.Load())
		}
		if got := inner.calls.Load(); got != 6 {
			t.Fatalf("calls: %d, want 6 (5 failures, then the answer)", got)
		}
		if !resp.Success || resp.LastLog != 7 {
			t.Fatalf("resp: %+v", resp)
		}
		if p, ok := tr.progress.get("2"); !ok || p.lastLog != 7 {
			t.Fatalf("progress not recorded: %+v %v", p, ok)
		}
	}
}

// TestHeartbeatNotRetried: heartbeats fail at once (hashicorp/raft's own
// heartbeat backoff is capped at half the heartbeat timeout).
func TestHeartbeatNotRetried(t *testing.T) {
	inner := &flakyTransport{fail: 1}
	tr := retryingTransport(inner, make(chan struct{}), time.Hour)
	var resp raft.AppendEntriesResponse
	hb := raft.AppendEntriesRequest{Term: 3}
	if !isHeartbeat(&hb) || isHeartbeat(&replication) {
		t.Fatal("isHeartbeat misclassifies")
	}
	if err := tr.AppendEntries("2", "127.0.0.1:1", &hb, &resp); !errors.Is(err, errCutOff) {
		t.Fatalf("heartbeat: %v, want the transport's error", err)
	}
	if got := inner.calls.Load(); got != 1 {
		t.Fatalf("heartbeat calls: %d, want 1", got)
	}
}

// TestReplicationRetryEnds: the retries end with the last error when the
// quorum closes (Raft's shutdown waits for its replication goroutines) and
// after retryFor.
func TestReplicationRetryEnds(t *testing.T) {
	halt := make(chan struct{})
	inner := &flakyTransport{fail: 1 << 62}
	tr := retryingTransport(inner, halt, time.Hour)
	done := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		req := replication
		done <- tr.AppendEntries("2", "127.0.0.1:1", &req, &resp)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for inner.calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no retries")
		}
		select {
		case err := <-done:
			t.Fatalf("returned before halt: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	close(halt)
	select {
	case err := <-done:
		if !errors.Is(err, errCutOff) {
			t.Fatalf("after halt: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("retries went on after halt")
	}

	inner = &flakyTransport{fail: 1 << 62}
	tr = retryingTransport(inner, make(chan struct{}), 20*time.Millisecond)
	var resp raft.AppendEntriesResponse
	req := replication
	if err := tr.AppendEntries("2", "127.0.0.1:1", &req, &resp); !errors.Is(err, errCutOff) {
		t.Fatalf("after retryFor: %v", err)
	}
}
