package txn

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unreadableLog is a __transaction_state partition with one byte that
// cannot be read.
type unreadableLog struct{ memLog }

func (*unreadableLog) Read(int64, int, int64, bool) ([]byte, error) {
	return nil, errors.New("disk gone")
}
func (*unreadableLog) LogEndOffset() int64 { return 1 }

// TestLoadFailedNotCoordinator: a partition whose load failed answers
// NOT_COORDINATOR, as Kafka 4.4's CoordinatorRuntime answers for a
// coordinator in state FAILED (kept until a later leader epoch loads the
// partition again), not COORDINATOR_NOT_AVAILABLE.
func TestLoadFailedNotCoordinator(t *testing.T) {
	c, err := New(Options{NumPartitions: 1, Log: func(int32) (Log, bool) { return &unreadableLog{}, true },
		ProducerIDs: &fakePIDs{}, Markers: &fakeMarkers{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.LoadPartition(0); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	id := "txn"
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	if code := c.InitProducerID(ctx, req).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("InitProducerID: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
}
