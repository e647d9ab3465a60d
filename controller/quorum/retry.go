package quorum

import (
	"time"

	"github.com/hashicorp/raft"
)

// Replication retries. hashicorp/raft v1.7.2 waits an exponential backoff
// before each new attempt to replicate to a follower that failed (10 ms
// doubling up to 10.24 s), and that wait cannot be cut short. So a node
// cut off from the Raft leader for a few seconds got the log again only
// seconds after the cut healed: in one fault run a node isolated for 7 s
// applied no metadata for 4.4 s after the heal, and meanwhile answered
// Metadata and Fetch as the leader of partitions it had lost (DURABILITY
// finding 16). Kafka's controllers' followers pull the log and catch up
// right after a heal. The transport therefore retries a failed
// replication request itself, every replicationRetryEvery for up to
// replicationRetryFor, so that Raft's own backoff grows only once per
// replicationRetryFor and a healed follower gets the log within about
// replicationRetryEvery. Heartbeats are not retried: hashicorp/raft caps
// their backoff at half the heartbeat timeout.
const (
	replicationRetryEvery = 50 * time.Millisecond
	replicationRetryFor   = 10 * time.Second
)

// isHeartbeat reports whether args is one of hashicorp/raft's heartbeats:
// an AppendEntries with no entries and no log position or commit index
// (replication requests always carry the previous entry or the commit
// index once the log has an entry).
func isHeartbeat(args *raft.AppendEntriesRequest) bool {
	return len(args.Entries) == 0 && args.PrevLogEntry == 0 && args.PrevLogTerm == 0 && args.LeaderCommitIndex == 0
}

// appendWithRetry sends args through send and, when it fails and args is a
// replication request, sends it again every t.retryEvery until it succeeds,
// t.retryFor has passed or t.halt is closed; it returns the last error.
// Sending the same request again is safe: AppendEntries is idempotent at
// the follower, and an answer carrying a newer term still stops the
// leader's replication as it would have.
func (t *trackingTransport) appendWithRetry(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, send func() error) error {
	err := send()
	if err == nil || isHeartbeat(args) || t.retryFor <= 0 {
		return err
	}
	deadline := time.Now().Add(t.retryFor)
	tick := time.NewTicker(t.retryEvery)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-t.halt:
			return err
		case <-tick.C:
		}
		*resp = raft.AppendEntriesResponse{}
		if err = send(); err == nil {
			return nil
		}
	}
	return err
}
