package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// sessionEnv is an adminEnv with fetch sessions and topics whose logs exist.
type sessionEnv struct {
	*adminEnv
	ids map[string][16]byte
}

func newSessionEnv(t *testing.T, topics ...string) *sessionEnv {
	t.Helper()
	e := &sessionEnv{adminEnv: newAdminEnv(t), ids: map[string][16]byte{}}
	e.d.Init()
	for _, name := range topics {
		id := e.createTopic(t, name, 2, nil)
		e.ids[name] = id
		for p := int32(0); p < 2; p++ {
			if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: name, Partition: p}, id, storage.DefaultLogConfig()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

func (e *sessionEnv) produce(t *testing.T, topic string, partition int32, value string) {
	t.Helper()
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
		Records: []wire.Record{{Value: []byte(value)}}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := e.call(t, req, 9).(*kmsg.ProduceResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("produce %s/%d: error %d", topic, partition, c)
	}
}

type fetchPos struct {
	topic     string
	partition int32
	offset    int64
}

// fetch sends one Fetch at version v with no wait.
func (e *sessionEnv) fetch(t *testing.T, v int16, sessionID, epoch int32, parts []fetchPos, forget []fetchPos) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionID, req.SessionEpoch = sessionID, epoch
	for _, p := range parts {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = p.topic, e.ids[p.topic]
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p.partition, p.offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	for _, p := range forget {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID = p.topic, e.ids[p.topic]
		ft.Partitions = []int32{p.partition}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return e.call(t, req, v).(*kmsg.FetchResponse)
}

// answered returns "topic/partition" -> record bytes of a response.
func (e *sessionEnv) answered(resp *kmsg.FetchResponse) map[string]int {
	out := map[string]int{}
	for _, rt := range resp.Topics {
		name := rt.Topic
		for n, id := range e.ids {
			if rt.TopicID == id && name == "" {
				name = n
			}
		}
		for _, rp := range rt.Partitions {
			out[name+"/"+string(rune('0'+rp.Partition))] = len(rp.RecordBatches)
		}
	}
	return out
}

// TestFetchSessionEpochs is the regression test for issue 11 item 15: the
// full fetch that created a session already advanced its epoch, so the
// client's first incremental fetch (epoch 1) got INVALID_FETCH_SESSION_EPOCH
// and every client fell back to full fetches (11,276 resets in 112 s of a
// franz-go run). It drives sessions through many epochs, adds, updates and
// forgets partitions, by name (v12) and by id (v13+), and checks that
// every incremental fetch is accepted and answers only what changed.
func TestFetchSessionEpochs(t *testing.T) {
	for _, v := range []int16{7, 12, 13, 16} {
		e := newSessionEnv(t, "a", "b")
		e.produce(t, "a", 0, "a0-0")

		resp := e.fetch(t, v, 0, 0, []fetchPos{{"a", 0, 0}, {"a", 1, 0}}, nil)
		if resp.ErrorCode != 0 || resp.SessionID == 0 {
			t.Fatalf("v%d full fetch: error %d session %d", v, resp.ErrorCode, resp.SessionID)
		}
		id := resp.SessionID
		if got := e.answered(resp); len(got) != 2 || got["a/0"] == 0 {
			t.Fatalf("v%d full fetch answered %v, want both partitions and a/0's record", v, got)
		}

		// Epoch 1 right after the full fetch: nothing new, so nothing answered.
		resp = e.fetch(t, v, id, 1, []fetchPos{{"a", 0, 1}}, nil)
		if resp.ErrorCode != 0 || resp.SessionID != id {
			t.Fatalf("v%d epoch 1: error %d session %d, want 0 and %d", v, resp.ErrorCode, resp.SessionID, id)
		}
		if got := e.answered(resp); len(got) != 0 {
			t.Errorf("v%d epoch 1 answered %v, want nothing new", v, got)
		}

		// Epoch 2: new data on a/1 (a partition not named in the request).
		e.produce(t, "a", 1, "a1-0")
		resp = e.fetch(t, v, id, 2, nil, nil)
		if got := e.answered(resp); resp.ErrorCode != 0 || len(got) != 1 || got["a/1"] == 0 {
			t.Errorf("v%d epoch 2: error %d answered %v, want a/1 with data", v, resp.ErrorCode, got)
		}

		// Epoch 3: add b/0 (with data), forget a/0.
		e.produce(t, "b", 0, "b0-0")
		resp = e.fetch(t, v, id, 3, []fetchPos{{"b", 0, 0}, {"a", 1, 1}}, []fetchPos{{"a", 0, 0}})
		if got := e.answered(resp); resp.ErrorCode != 0 || len(got) != 1 || got["b/0"] == 0 {
			t.Errorf("v%d epoch 3: error %d answered %v, want b/0 with data", v, resp.ErrorCode, got)
		}

		// Epoch 4: new data on the forgotten a/0 is not answered; on a/1 it is.
		e.produce(t, "a", 0, "a0-1")
		e.produce(t, "a", 1, "a1-1")
		resp = e.fetch(t, v, id, 4, []fetchPos{{"b", 0, 1}}, nil)
		if got := e.answered(resp); resp.ErrorCode != 0 || len(got) != 1 || got["a/1"] == 0 {
			t.Errorf("v%d epoch 4: error %d answered %v, want only a/1", v, resp.ErrorCode, got)
		}

		// Epochs 5..40 with nothing new: all accepted, all empty.
		for epoch := int32(5); epoch <= 40; epoch++ {
			resp = e.fetch(t, v, id, epoch, []fetchPos{{"a", 1, 2}}, nil)
			if resp.ErrorCode != 0 || resp.SessionID != id || len(resp.Topics) != 0 {
				t.Fatalf("v%d epoch %d: error %d session %d topics %d", v, epoch, resp.ErrorCode, resp.SessionID, len(resp.Topics))
			}
		}

		// A stale or repeated epoch is refused and does not close the session.
		if resp = e.fetch(t, v, id, 40, nil, nil); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
			t.Errorf("v%d repeated epoch 40: error %d, want INVALID_FETCH_SESSION_EPOCH", v, resp.ErrorCode)
		}
		if resp = e.fetch(t, v, id, -7, nil, nil); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
			t.Errorf("v%d epoch -7: error %d, want INVALID_FETCH_SESSION_EPOCH", v, resp.ErrorCode)
		}
		if resp = e.fetch(t, v, id, 41, nil, nil); resp.ErrorCode != 0 {
			t.Errorf("v%d epoch 41 after refusals: error %d", v, resp.ErrorCode)
		}
		if resp = e.fetch(t, v, id+1000, 1, nil, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Errorf("v%d unknown session: error %d, want FETCH_SESSION_ID_NOT_FOUND", v, resp.ErrorCode)
		}

		// Forgetting every partition closes the session (sessionless answer).
		resp = e.fetch(t, v, id, 42, nil, []fetchPos{{"a", 1, 0}, {"b", 0, 0}})
		if resp.ErrorCode != 0 || resp.SessionID != 0 {
			t.Errorf("v%d empty session: error %d session %d, want 0 and 0", v, resp.ErrorCode, resp.SessionID)
		}
		if resp = e.fetch(t, v, id, 43, nil, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Errorf("v%d closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", v, resp.ErrorCode)
		}

		// Epoch -1 closes a session and the fetch is sessionless; a full
		// fetch naming an old session replaces it.
		resp = e.fetch(t, v, 0, 0, []fetchPos{{"a", 0, 0}}, nil)
		id = resp.SessionID
		resp = e.fetch(t, v, id, 0, []fetchPos{{"a", 0, 0}}, nil)
		if resp.SessionID == 0 || resp.SessionID == id {
			t.Errorf("v%d full fetch naming session %d: new session %d", v, id, resp.SessionID)
		}
		if again := e.fetch(t, v, id, 1, nil, nil); again.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Errorf("v%d replaced session still answers: %d", v, again.ErrorCode)
		}
		id = resp.SessionID
		if resp = e.fetch(t, v, id, -1, []fetchPos{{"a", 0, 0}}, nil); resp.SessionID != 0 || e.answered(resp)["a/0"] == 0 {
			t.Errorf("v%d epoch -1: session %d answered %v", v, resp.SessionID, e.answered(resp))
		}
		if got := e.d.fetchSessions.len(); got != 0 {
			t.Errorf("v%d: %d sessions left, want 0", v, got)
		}
	}
}

// TestFetchSessionTopicIDMismatch: a session opened by name (v12) and used
// by id (v13) is FETCH_SESSION_TOPIC_ID_ERROR, as in Kafka.
func TestFetchSessionTopicIDMismatch(t *testing.T) {
	e := newSessionEnv(t, "a")
	resp := e.fetch(t, 12, 0, 0, []fetchPos{{"a", 0, 0}}, nil)
	if resp = e.fetch(t, 13, resp.SessionID, 1, nil, nil); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("error %d, want FETCH_SESSION_TOPIC_ID_ERROR", resp.ErrorCode)
	}
}

// TestFetchSessionRoundRobin: a partition that returned records moves to
// the end of the session's order, so it cannot starve the others.
func TestFetchSessionRoundRobin(t *testing.T) {
	e := newSessionEnv(t, "a")
	resp := e.fetch(t, 13, 0, 0, []fetchPos{{"a", 0, 0}, {"a", 1, 0}}, nil)
	id := resp.SessionID
	e.produce(t, "a", 0, "x")
	e.fetch(t, 13, id, 1, nil, nil)
	e.produce(t, "a", 0, "y")
	e.produce(t, "a", 1, "z")
	resp = e.fetch(t, 13, id, 2, []fetchPos{{"a", 0, 1}}, nil)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("order after a/0 returned data: %+v, want a/1 first", resp.Topics)
	}
}

// TestFetchSessionCacheEviction follows Kafka's FetchSessionCacheShard
// rules with max.incremental.fetch.session.cache.slots = 2.
func TestFetchSessionCacheEviction(t *testing.T) {
	c := newFetchSessionCache(2)
	t0 := time.Unix(1000, 0)
	a := c.create(t0, false, true, 5)
	b := c.create(t0, false, true, 3)
	if a == nil || b == nil {
		t.Fatal("room for two")
	}
	// Young sessions are protected from consumers: no room.
	if s := c.create(t0.Add(time.Second), false, true, 100); s != nil {
		t.Fatal("a young session was evicted by a consumer's")
	}
	// A follower may evict a consumer's session however young: the cheapest (b, 3).
	f := c.create(t0.Add(time.Second), true, true, 1)
	if f == nil || c.get(b.id) != nil || c.get(a.id) == nil {
		t.Fatalf("follower: created %v, b kept %v, a kept %v", f != nil, c.get(b.id) != nil, c.get(a.id) != nil)
	}
	// Past the protection, a bigger consumer session evicts a smaller old
	// one but not a follower's, and not one of the same size.
	now := t0.Add(fetchSessionEvictionMs + time.Second)
	c.touch(a, now, 5)
	c.touch(f, now, 1)
	if s := c.create(now, false, true, 5); s != nil {
		t.Fatal("a session of the same size evicted another")
	}
	g := c.create(now, false, true, 6)
	if g == nil || c.get(a.id) != nil || c.get(f.id) == nil {
		t.Fatalf("bigger: created %v, a kept %v, follower kept %v", g != nil, c.get(a.id) != nil, c.get(f.id) != nil)
	}
	// A session idle longer than the eviction time goes first, whatever its worth.
	later := now.Add(fetchSessionEvictionMs + time.Second)
	c.touch(g, later, 6)
	h := c.create(later, false, true, 0)
	if h == nil || c.get(f.id) != nil || c.get(g.id) == nil {
		t.Fatalf("idle: created %v, idle follower kept %v, g kept %v", h != nil, c.get(f.id) != nil, c.get(g.id) != nil)
	}
	// With no slots, no session is ever created; the fetch is sessionless.
	if s := newFetchSessionCache(0).create(t0, true, true, 1); s != nil {
		t.Fatal("created a session with 0 slots")
	}
}
