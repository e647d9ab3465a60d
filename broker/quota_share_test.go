package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchConsumerByteRate: a share consumer's ShareFetch responses
// count against its client id's consumer_byte_rate, and a response past the
// quota carries the throttle, as Kafka 4.4's (KafkaApis records a share
// fetch's response size on the fetch quota). samsa counted only Fetch, so
// confluent-kafka-python's test_throttle_cb_fires_under_quota (a share
// consumer held to 1 KB/s) never saw a throttle.
func TestShareFetchConsumerByteRate(t *testing.T) {
	n := startTestNode(t, t.TempDir(), shareFuzzOverrides...)
	defer closeTestNode(t, n)
	w := setupShareWorld(t, n)
	m := newShareMember(w, 1, "sg")
	defer m.conn.close()

	// 100 bytes/s: less than the 90 records of the three partitions with
	// their batch headers make over the quota's windows.
	q := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", kmsg.StringPtr("sfz") // newShareMember's client id
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "consumer_byte_rate", 100
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	q.Entries = append(q.Entries, e)
	resp, err := m.conn.roundTrip(q, 1)
	if err != nil || resp.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas: %v %+v", err, resp)
	}

	deadline := time.Now().Add(2 * time.Minute)
	received := 0
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no throttled ShareFetch response within two minutes (%d bytes of records received)", received)
		}
		if m.epoch == 0 {
			m.heartbeat(false)
			continue
		}
		fr := m.fetchEvery(t, "ShareFetch", 100, nil)
		for _, rt := range fr.Topics {
			for _, p := range rt.Partitions {
				received += len(p.Records)
			}
		}
		if fr.ThrottleMillis > 0 {
			if received == 0 {
				t.Fatalf("throttled for %d ms before any record was sent", fr.ThrottleMillis)
			}
			return
		}
	}
}
