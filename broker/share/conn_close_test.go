package share

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"

	sharestate "github.com/samsa-broker/samsa/coordinator/share"
)

// TestConnectionClosedReleases: before, a share session outlived its
// connection and the records its member held stayed locked until their
// acquisition locks expired (30 s by default), although Kafka 4.4 closes
// a connection's share sessions when it disconnects and releases the
// member's records. Now closing the connection releases them at once
// (written as available, a waiting fetch woken) and another member gets
// them; a session the member opened since on another connection, and
// other members' sessions, stay.
func TestConnectionClosedReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePersister()
		p.Initialize(context.Background(), testKey, 0, 0)
		l := testLog(t, 2, 3) // offsets 0-5
		// A lock far longer than the test: only the close can release.
		m := newTestManager(p, map[string]string{"share.record.lock.duration.ms": "3600000"})
		defer m.Close()
		ctx := context.Background()
		tp := TopicPartition{TopicID: testKey.TopicID}
		a, b := SessionKey{Group: "g", Member: "a"}, SessionKey{Group: "g", Member: "b"}
		if sf := m.FetchSessionOn(7, a, 0, []FetchPartition{{tp, 1000}}, nil, false); sf.Code != 0 {
			t.Fatalf("open a: %+v", sf)
		}
		if sf := m.FetchSessionOn(8, b, 0, []FetchPartition{{tp, 1000}}, nil, false); sf.Code != 0 {
			t.Fatalf("open b: %+v", sf)
		}
		tg := Target{Key: testKey, Log: l}
		if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1 << 20}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{0, 5, 1}}) {
			t.Fatalf("a acquired %v", res.Acquired)
		}
		if res := m.Fetch(ctx, tg, FetchRequest{Member: "b", MaxBytes: 1 << 20}); len(res.Acquired) != 0 {
			t.Fatalf("b acquired %v of a's records", res.Acquired)
		}
		ch := make(chan struct{}, 1)
		defer m.Watch(testKey, ch)()

		m.ConnectionClosed(9) // no session opened on it
		m.ConnectionClosed(100)
		if n := m.Sessions(); n != 2 {
			t.Fatalf("%d sessions after closing unrelated connections, want 2", n)
		}
		m.ConnectionClosed(7)
		<-ch // woken by the release, not by a lock expiry (the clock did not move)
		synctest.Wait()
		if n := m.Sessions(); n != 1 {
			t.Fatalf("%d sessions after a's connection closed, want 1 (b's)", n)
		}
		if sf := m.FetchSessionOn(7, a, 1, nil, nil, false); sf.Code == 0 {
			t.Fatal("a's session is still there after its connection closed")
		}
		st := p.state(testKey)
		if want := []sharestate.Batch{{FirstOffset: 0, LastOffset: 5, DeliveryState: sharestate.StateAvailable, DeliveryCount: 1}}; !reflect.DeepEqual(st.Batches, want) {
			t.Fatalf("written state %+v, want %+v", st.Batches, want)
		}
		if res := m.Fetch(ctx, tg, FetchRequest{Member: "b", MaxBytes: 1 << 20}); !reflect.DeepEqual(res.Acquired, []AcquiredRange{{0, 5, 2}}) {
			t.Fatalf("b acquired %v after a's connection closed, want 0-5 (count 2)", res.Acquired)
		}
	})
}

// TestConnectionClosedKeepsReplacedSession: a member that reconnected
// and opened a new session (epoch 0) on its new connection keeps it, and
// its records, when the old connection's close is noticed late.
func TestConnectionClosedKeepsReplacedSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakePersister()
		p.Initialize(context.Background(), testKey, 0, 0)
		l := testLog(t, 1, 3)
		m := newTestManager(p, map[string]string{"share.record.lock.duration.ms": "3600000"})
		defer m.Close()
		ctx := context.Background()
		tp := TopicPartition{TopicID: testKey.TopicID}
		a := SessionKey{Group: "g", Member: "a"}
		m.FetchSessionOn(1, a, 0, []FetchPartition{{tp, 1000}}, nil, false)
		if sf := m.FetchSessionOn(2, a, 0, []FetchPartition{{tp, 1000}}, nil, false); sf.Code != 0 || !sf.Full {
			t.Fatalf("reopen on connection 2: %+v", sf)
		}
		tg := Target{Key: testKey, Log: l}
		if res := m.Fetch(ctx, tg, FetchRequest{Member: "a", MaxBytes: 1000}); len(res.Acquired) != 1 {
			t.Fatalf("a acquired %v", res.Acquired)
		}
		m.ConnectionClosed(1)
		synctest.Wait()
		if sf := m.FetchSessionOn(2, a, 1, nil, nil, false); sf.Code != 0 {
			t.Fatalf("the session on connection 2 went with connection 1: %+v", sf)
		}
		if res := m.Fetch(ctx, tg, FetchRequest{Member: "b", MaxBytes: 1000}); len(res.Acquired) != 0 {
			t.Fatalf("b acquired %v: a's records were released", res.Acquired)
		}
	})
}
