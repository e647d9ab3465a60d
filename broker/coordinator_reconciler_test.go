package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/txn"
)

// reconcilerHarness is a coordinatorReconciler of node 1 whose published
// image the test sets, with shard sets that record their loads and
// unloads (the group coordinator's and the transaction coordinator's
// only when all is set).
type reconcilerHarness struct {
	r         *coordinatorReconciler
	published atomic.Pointer[controller.Image]
	mu        sync.Mutex
	events    []string
}

func newReconcilerHarness(all bool) *reconcilerHarness {
	h := &reconcilerHarness{}
	h.r = &coordinatorReconciler{nodeID: 1, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		wake: make(chan struct{}, 1), published: h.published.Load}
	set := func(s *shardSet, topic, prefix string, enabled func() bool) {
		s.init(topic, enabled,
			func(p int32) error { h.record(prefix+"load", p); return nil },
			func(p int32) { h.record(prefix+"unload", p) })
	}
	set(&h.r.shareStates, share.StateTopic, "", nil)
	// Without all, the other coordinators do not exist on this node.
	set(&h.r.groups, coordinator.OffsetsTopic, "group ", func() bool { return all })
	set(&h.r.txns, txn.TransactionStateTopic, "txn ", func() bool { return all })
	return h
}

func (h *reconcilerHarness) record(what string, p int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, fmt.Sprint(what, " ", p))
}

func (h *reconcilerHarness) took() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// stateImage is an image at offset whose partition 0 of
// __share_group_state, __consumer_offsets and __transaction_state is led
// by leader in leaderEpoch.
func stateImage(offset int64, leader, leaderEpoch int32) *controller.Image {
	img := controller.EmptyImage("c", 1)
	img.Offset = offset
	for _, topic := range []string{share.StateTopic, coordinator.OffsetsTopic, txn.TransactionStateTopic} {
		img.Topics[topic] = &controller.Topic{Name: topic,
			Partitions: []controller.Partition{{Partition: 0, Leader: leader, LeaderEpoch: leaderEpoch}}}
	}
	return img
}

// TestCoordinatorReconcilerDeliveredImage: the controller publishes an
// image (Controller.Image) only after OnChange returned, and OnChange
// wakes the reconciler, which may run at once. A reconcile in that window
// must follow the delivered image, not the published previous one: it
// reconciled with the old image and spent the wake-up, so the new leader
// of a __share_group_state (or __consumer_offsets, __transaction_state)
// partition never loaded its shard and answered NOT_COORDINATOR until
// another image came (TestSharePersisterFailover, about one run in five).
func TestCoordinatorReconcilerDeliveredImage(t *testing.T) {
	h := newReconcilerHarness(false)
	prev := stateImage(10, 2, 0)
	h.published.Store(prev)
	h.r.reconcile()
	if ev := h.took(); len(ev) != 0 {
		t.Fatalf("node 1 leads nothing yet, but: %v", ev)
	}
	// OnChange(prev, next): node 1 now leads partition 0; the wake-up's
	// reconcile runs before the controller publishes next.
	next := stateImage(11, 1, 1)
	h.r.imageChanged(next)
	select {
	case <-h.r.wake:
	default:
		t.Fatal("imageChanged did not wake the reconciler")
	}
	h.r.reconcile()
	if ev := h.took(); !slices.Equal(ev, []string{"load 0"}) {
		t.Fatalf("reconcile during OnChange: %v, want [load 0]", ev)
	}
	if e := h.r.shareStates.coordinatorEpoch(0); e != 1 {
		t.Fatalf("coordinator epoch %d, want 1", e)
	}
	// Published at last: nothing more to do.
	h.published.Store(next)
	h.r.reconcile()
	if ev := h.took(); len(ev) != 1 {
		t.Fatalf("after publishing: %v", ev)
	}
	// An image published without a delivery seen here (none is older
	// than the delivered one) is followed as well: the newest wins.
	h.published.Store(stateImage(12, 3, 2))
	h.r.reconcile()
	if ev := h.took(); !slices.Equal(ev, []string{"load 0", "unload 0"}) {
		t.Fatalf("after a newer published image: %v", ev)
	}
}

// TestCoordinatorReconcilerRunDeliveredImage is the same through run, the
// reconciler's goroutine: the published image never shows node 1 as the
// leader during the test, as while OnChange runs, and the shard loads
// all the same.
func TestCoordinatorReconcilerRunDeliveredImage(t *testing.T) {
	h := newReconcilerHarness(false)
	h.published.Store(stateImage(10, 2, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.r.run(ctx) }()
	defer func() { cancel(); <-done }()
	h.r.imageChanged(stateImage(11, 1, 1))
	if !poll(30*time.Second, func() bool { return slices.Equal(h.took(), []string{"load 0"}) }) {
		t.Fatalf("the shard of the delivered image never loaded: %v", h.took())
	}
}

// TestCoordinatorReconcilerDeliveredImageAllCoordinators: the group and
// transaction coordinators' shards follow the delivered image as the
// share coordinator's do (one reconciler loads all three), so a consumer
// group or a transactional producer is not left on NOT_COORDINATOR after
// its coordinator's partition changed leader either.
func TestCoordinatorReconcilerDeliveredImageAllCoordinators(t *testing.T) {
	h := newReconcilerHarness(true)
	h.published.Store(stateImage(10, 2, 0))
	h.r.reconcile()
	h.r.imageChanged(stateImage(11, 1, 1))
	h.r.reconcile()
	want := []string{"group load 0", "txn load 0", "load 0"}
	if ev := h.took(); !slices.Equal(ev, want) {
		t.Fatalf("reconcile during OnChange: %v, want %v", ev, want)
	}
	if e := h.r.transactionCoordinatorEpoch(0); e != 1 {
		t.Fatalf("transaction coordinator epoch %d, want 1", e)
	}
}
