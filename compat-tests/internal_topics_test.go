package compattests

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/coordinator"
)

// TestInternalTopicsProtected reproduces issue 11 item 7 against the real
// binary. Before: a client's Produce of a garbage record to
// __consumer_offsets was accepted, and from then on the group's
// coordinator partition failed to load at every start
// (COORDINATOR_NOT_AVAILABLE forever); DeleteTopics of __consumer_offsets
// answered 0 and lost every committed offset. Now: an ordinary client's
// Produce is INVALID_TOPIC_EXCEPTION and DeleteTopics is refused; a garbage
// record written through Kafka's "__admin_client" escape hatch is skipped
// with an ERROR line at the next start, and the group's offsets survive.
func TestInternalTopicsProtected(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	if created, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, created.Err)
	}
	waitTopicReady(t, ctx, adm, "orders", 1)
	const group = "protected"
	commit := func(adm *kadm.Client, offset int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.AddOffset("orders", 0, offset, -1)
		resp, err := adm.CommitOffsets(ctx, group, offs)
		if err != nil || resp.Error() != nil {
			t.Fatalf("commit %d: %v / %v", offset, err, resp.Error())
		}
	}
	fetched := func(adm *kadm.Client) int64 {
		t.Helper()
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("FetchOffsets: %v", err)
		}
		o, ok := offs.Lookup("orders", 0)
		if !ok || o.Err != nil {
			t.Fatalf("FetchOffsets: %v %v", ok, o.Err)
		}
		return o.At
	}
	commit(adm, 42)

	partition := coordinator.PartitionFor(group, 50)
	produce := func(clientID string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(clientID),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: coordinator.OffsetsTopic, Partition: partition,
			Key: []byte{0, 1, 0xff, 0xff}, Value: []byte("garbage")}).FirstErr()
	}
	if err := produce("attacker"); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("ordinary client's produce to %s: %v, want INVALID_TOPIC_EXCEPTION", coordinator.OffsetsTopic, err)
	}
	del, err := adm.DeleteTopics(ctx, coordinator.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if r := del[coordinator.OffsetsTopic]; !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Fatalf("DeleteTopics %s: %v, want INVALID_TOPIC_EXCEPTION", coordinator.OffsetsTopic, r.Err)
	}
	if got := fetched(adm); got != 42 {
		t.Fatalf("offset after the refusals: %d, want 42", got)
	}
	if err := produce("__admin_client"); err != nil {
		t.Fatalf("__admin_client's produce (allowed, as in Kafka): %v", err)
	}

	b.Stop(t)
	b.Restart(t)
	_, adm2 := newAdmin(t, b.Addr)
	if got := fetched(adm2); got != 42 {
		t.Fatalf("offset after a restart over the garbage record: %d, want 42", got)
	}
	commit(adm2, 43)
	if got := fetched(adm2); got != 43 {
		t.Fatalf("offset after a new commit: %d, want 43", got)
	}
	if out := b.LastRunOutput(); !strings.Contains(out, "skipped a record that does not decode") {
		t.Errorf("no ERROR line about the skipped record:\n%s", out)
	}
}
