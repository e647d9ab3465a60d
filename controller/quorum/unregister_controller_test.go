package quorum

import (
	"errors"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// registeredOf is node q's view of the registered controllers.
func registeredOf(t *testing.T, q *Quorum) map[int32]bool {
	t.Helper()
	ctrls, err := q.Controllers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]bool{}
	for id := range ctrls {
		out[id] = true
	}
	return out
}

// TestUnregisterController: Kafka 4.4's answers (QuorumController and
// ClusterControlManager.unregisterController): the active controller
// cannot unregister itself, an unknown id is not registered, nor is a
// broker-only node; a voter stays registered while it votes; a controller
// removed from the voters is still registered until UnregisterController,
// after which it keeps receiving the log, is no longer registered on any
// node, and a second unregister finds nothing; AddVoter registers it
// again.
func TestUnregisterController(t *testing.T) {
	tc := newTestCluster(t, 3, 300*time.Millisecond, nil)
	tc.mustRegister(1)
	ctx := t.Context()
	if err := tc.onLeader(func(l *testNode) error { return l.q.UnregisterController(ctx, l.id) }); !errors.Is(err, ErrUnregisterActive) {
		t.Fatalf("unregister the active controller: %v, want ErrUnregisterActive", err)
	}
	if err := tc.onLeader(func(l *testNode) error { return l.q.UnregisterController(ctx, 9) }); !errors.Is(err, ErrControllerNotRegistered) {
		t.Fatalf("unregister an unknown id: %v, want ErrControllerNotRegistered", err)
	}
	// A broker-only node receives the log at its advertised listener.
	if err := tc.onLeader(func(l *testNode) error { return l.c.RegisterBroker(controller.Broker{ID: 5, Host: "b5", Port: 9092}) }); err != nil {
		t.Fatal(err)
	}
	if err := tc.onLeader(func(l *testNode) error { return l.q.AddObserver(5, "b5:9092") }); err != nil {
		t.Fatal(err)
	}
	if err := tc.onLeader(func(l *testNode) error { return l.q.UnregisterController(ctx, 5) }); !errors.Is(err, ErrControllerNotRegistered) {
		t.Fatalf("unregister a broker-only node: %v, want ErrControllerNotRegistered", err)
	}
	if got := registeredOf(t, tc.leader().q); len(got) != 3 || got[5] {
		t.Fatalf("registered controllers %v, want the three voters", got)
	}
	victim := int32(1)
	if victim == tc.leader().id {
		victim = 2
	}
	if err := tc.onLeader(func(l *testNode) error {
		if l.id == victim {
			return nil // leadership moved to the victim: skip this check
		}
		return l.q.UnregisterController(ctx, victim)
	}); err != nil {
		t.Fatalf("unregister voter %d: %v", victim, err)
	}
	if !registeredOf(t, tc.leader().q)[victim] {
		t.Fatalf("voter %d unregistered", victim)
	}

	// Removed from the voters: still registered.
	votes := func() bool { return votersOf(t, tc.leader().q)[victim] }
	tc.change("remove the victim", func(l *testNode) error {
		return l.q.RemoveVoter(ctx, victim, [16]byte{})
	}, func() bool { return !votes() })
	if !registeredOf(t, tc.leader().q)[victim] {
		t.Fatalf("removed controller %d not registered before UnregisterController", victim)
	}
	unregistered := func() bool { return !registeredOf(t, tc.leader().q)[victim] }
	tc.change("unregister it", func(l *testNode) error { return l.q.UnregisterController(ctx, victim) }, unregistered)
	for _, n := range tc.nodes {
		waitFor(t, 30*time.Second, "every node to see the unregistration", func() bool {
			return !registeredOf(t, n.q)[victim]
		})
	}
	// It still receives the log.
	tc.mustCreate("after-unregister")
	waitFor(t, 30*time.Second, "the unregistered controller to receive the log", func() bool {
		return tc.nodes[victim].c.Image().Topics["after-unregister"] != nil
	})
	if err := tc.onLeader(func(l *testNode) error { return l.q.UnregisterController(ctx, victim) }); !errors.Is(err, ErrControllerNotRegistered) {
		t.Fatalf("unregister it twice: %v, want ErrControllerNotRegistered", err)
	}
	dir := [16]byte{0xd1}
	addr := string(tc.nodes[victim].trans.LocalAddr())
	tc.change("add it back", func(l *testNode) error {
		ctxAdd, cancel := contextTimeout(t, 30*time.Second)
		defer cancel()
		return l.q.AddVoter(ctxAdd, victim, Member{Addr: addr, Listener: "CONTROLLER", DirectoryID: dir})
	}, votes)
	members, _, err := tc.leader().q.Members()
	if err != nil || members[victim].Unregistered || !registeredOf(t, tc.leader().q)[victim] {
		t.Fatalf("after AddVoter: %+v, %v", members[victim], err)
	}
}
