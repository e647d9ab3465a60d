package sharecoord

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
)

// unreadableLog is a __share_group_state partition with one byte that
// cannot be read.
type unreadableLog struct{ coordinator.Log }

func (unreadableLog) Read(int64, int, int64, bool) ([]byte, error) {
	return nil, errors.New("disk gone")
}
func (unreadableLog) LogStartOffset() int64 { return 0 }
func (unreadableLog) LogEndOffset() int64   { return 1 }

// TestLoadFailedNotCoordinator: a partition whose load failed answers
// NOT_COORDINATOR, as Kafka 4.4's CoordinatorRuntime answers for a
// coordinator in state FAILED (kept until a later leader epoch loads the
// partition again), not COORDINATOR_NOT_AVAILABLE.
func TestLoadFailedNotCoordinator(t *testing.T) {
	c, err := New(Options{NumPartitions: 1, Log: func(int32) (coordinator.Log, bool) { return unreadableLog{}, true }})
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
	k := share.Key{Group: "g", TopicID: [16]byte{1}, Partition: 0}
	if _, _, err := c.Read(ctx, k, 0); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("Read: %v, want NOT_COORDINATOR", err)
	}
	if err := c.Write(ctx, k, share.State{StartOffset: 0}); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("Write: %v, want NOT_COORDINATOR", err)
	}
}
