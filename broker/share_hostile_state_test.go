package broker

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// retriableShareCode reports whether a share-partition error is one a
// consumer retries (the share coordinator still loading under load).
func retriableShareCode(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.NotLeaderForPartition.Code, kerr.RequestTimedOut.Code, kerr.UnknownTopicOrPartition.Code:
		return true
	}
	return false
}

// fetchAll sends ShareFetches of every partition in m's session until each
// partition answered without a retriable error (within two minutes), and
// returns the ranges acquired per partition, failing on any other error.
func (m *shareMember) fetchAll(t testing.TB) map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	t.Helper()
	out := map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{}
	done := map[int32]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(done) < int(m.w.parts) {
		if time.Now().After(deadline) {
			t.Fatalf("share fetch: partitions %v answered, not all within two minutes", done)
		}
		fr := m.fetchEvery(t, "share fetch", 10, nil)
		for _, t0 := range fr.Topics {
			for _, p := range t0.Partitions {
				switch {
				case retriableShareCode(p.ErrorCode):
					continue
				case p.ErrorCode != 0:
					t.Fatalf("share fetch: partition %d error %d", p.Partition, p.ErrorCode)
				}
				done[p.Partition] = true
				out[p.Partition] = append(out[p.Partition], p.AcquiredRecords...)
			}
		}
		if len(fr.Topics) == 0 {
			// Nothing to say of any partition: all answered, none had records.
			for p := range m.w.parts {
				done[p] = true
			}
		}
	}
	return out
}

// join heartbeats until the member has its assignment.
func (m *shareMember) join(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for m.epoch == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not join %s", m.id, m.group)
		}
		m.heartbeat(false)
	}
}

// TestShareHostileStateWrite: WriteShareGroupState (an inter-broker API
// any client may send when no authorizer runs) can store batches over
// 2^40 or 2^63 offsets. A partition leader that reads such a state used
// to make a record per offset (terabytes); now it brings back at most
// 2^20 of them and serves the share-partition: offsets under an
// available batch are delivered (with their count), an acknowledged
// batch over everything leaves nothing to deliver.
func TestShareHostileStateWrite(t *testing.T) {
	n := startTestNode(t, t.TempDir(), shareFuzzOverrides...)
	defer closeTestNode(t, n)
	w := setupShareWorld(t, n)
	perPartition := int64(w.records / int(w.parts))

	// A first member initializes the share-partitions and leaves: they
	// are dropped and read again when next served.
	m := newShareMember(w, 5, "sg")
	m.join(t)
	m.fetchAll(t)
	closeReq := kmsg.NewPtrShareFetchRequest()
	closeReq.GroupID, closeReq.MemberID, closeReq.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), -1
	if resp, err := m.conn.roundTrip(closeReq, w.max[closeReq.Key()]); err != nil || resp.(*kmsg.ShareFetchResponse).ErrorCode != 0 {
		t.Fatalf("closing the session: %v %+v", err, resp)
	}
	m.conn.close()

	hostile := map[int32][]kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
		0: {{FirstOffset: 0, LastOffset: 1 << 40, DeliveryState: 0, DeliveryCount: 1}},
		1: {{FirstOffset: 5, LastOffset: math.MaxInt64, DeliveryState: 2, DeliveryCount: 1}},
		2: {{FirstOffset: 0, LastOffset: math.MaxInt64, DeliveryState: 4, DeliveryCount: 1}},
	}
	admin := &shareConn{addr: w.addr, fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("sfz"))}
	defer admin.close()
	for p, batches := range hostile {
		sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		sum.GroupID = "sg"
		st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		st.TopicID = w.topicID
		sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		sp.Partition = p
		st.Partitions = append(st.Partitions, sp)
		sum.Topics = append(sum.Topics, st)
		resp, err := admin.roundTrip(sum, w.max[sum.Key()])
		if err != nil {
			t.Fatal(err)
		}
		cur := resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
		if cur.ErrorCode != 0 {
			t.Fatalf("summary of partition %d: %d", p, cur.ErrorCode)
		}
		q := kmsg.NewPtrWriteShareGroupStateRequest()
		q.GroupID = "sg"
		wt := kmsg.NewWriteShareGroupStateRequestTopic()
		wt.TopicID = w.topicID
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset, wp.DeliveryCompleteCount = p, cur.StateEpoch, cur.LeaderEpoch, 0, -1
		wp.StateBatches = batches
		wt.Partitions = append(wt.Partitions, wp)
		q.Topics = append(q.Topics, wt)
		resp, err = admin.roundTrip(q, w.max[q.Key()])
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("writing partition %d's state: %d", p, code)
		}
	}

	m2 := newShareMember(w, 6, "sg")
	defer m2.conn.close()
	m2.join(t)
	got := m2.fetchAll(t)
	want := map[int32][]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
		0: {{FirstOffset: 0, LastOffset: perPartition - 1, DeliveryCount: 2}},
		1: {{FirstOffset: 0, LastOffset: 4, DeliveryCount: 1}},
	}
	for p := range w.parts {
		if len(got[p]) != len(want[p]) {
			t.Fatalf("partition %d acquired %+v, want %+v", p, got[p], want[p])
		}
		for i := range got[p] {
			if g, w := got[p][i], want[p][i]; g.FirstOffset != w.FirstOffset || g.LastOffset != w.LastOffset || g.DeliveryCount != w.DeliveryCount {
				t.Fatalf("partition %d acquired %+v, want %+v", p, got[p], want[p])
			}
		}
	}
	if p := n.srv.PanicCount(); p > 0 {
		t.Fatalf("%d requests panicked in handlers", p)
	}
}
