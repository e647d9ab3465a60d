package coordinator

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHeartbeatRebalanceTimeoutZero: a KIP-848 join with rebalance timeout
// 0 is taken; only -1 (not provided) is INVALID_REQUEST, as in Kafka 4.4's
// GroupCoordinatorService (found by compat-tests/diff TestDiffFuzz).
func TestHeartbeatRebalanceTimeoutZero(t *testing.T) {
	for _, c := range []struct {
		timeout int32
		want    *kerr.Error
	}{{0, nil}, {60000, nil}, {-1, kerr.InvalidRequest}} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "g", "m0000000000000000000000", 0
		req.RebalanceTimeoutMillis = c.timeout
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if got, msg := validateHeartbeat(&ConsumerGroupConfig{}, req); got != c.want {
			t.Errorf("rebalance timeout %d: %v (%s), want %v", c.timeout, got, msg, c.want)
		}
	}
}

// TestJoinSessionTimeoutFirst: a JoinGroup whose session timeout is out of
// bounds is INVALID_SESSION_TIMEOUT even from an unknown member of a group
// that does not exist (Kafka 4.4's GroupCoordinatorService.joinGroup checks
// it first; found by compat-tests/diff TestDiffFuzz).
func TestJoinSessionTimeoutFirst(t *testing.T) {
	c := newTestCoordinator(t, newLogs())
	req := joinReq("nogroup", "bogus-member", "t")
	req.SessionTimeoutMillis = 100_000_000
	if got := c.JoinGroup(t.Context(), Client{}, req).ErrorCode; got != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("error %d, want INVALID_SESSION_TIMEOUT", got)
	}
	req.SessionTimeoutMillis = 30000
	if got := c.JoinGroup(t.Context(), Client{}, req).ErrorCode; got != kerr.UnknownMemberID.Code {
		t.Fatalf("in bounds: error %d, want UNKNOWN_MEMBER_ID", got)
	}
}
