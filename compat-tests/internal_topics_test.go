package compattests

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/wire/wiretest"
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

// TestInternalTopicsZipBomb: a client whose client id is __admin_client
// (Kafka's exception, which samsa keeps) produces to __consumer_offsets a
// zstd batch of a few KB whose offset commit value is followed by 512 MiB
// of zeros (Kafka 4.4 takes such a batch). The broker restarted loads the
// partition streaming: the commit decodes from its first bytes, as Kafka
// 4.4's serde reads it (fields read, trailing bytes ignored), and the
// restarted process's peak resident memory stays far below the record's
// size (the load decompressed the batch whole before: over 1 GB).
func TestInternalTopicsZipBomb(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 3*time.Minute)
	_, adm := newAdmin(t, b.Addr)
	if created, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, created.Err)
	}
	waitTopicReady(t, ctx, adm, "orders", 1)
	const group = "bombed"
	offs := kadm.Offsets{}
	offs.AddOffset("orders", 0, 42, -1)
	if resp, err := adm.CommitOffsets(ctx, group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v / %v", err, resp.Error())
	}

	key := kmsg.NewOffsetCommitKey()
	key.Version, key.Group, key.Topic, key.Partition = 1, group, "orders", 0
	value := kmsg.NewOffsetCommitValue()
	value.Version, value.Offset, value.LeaderEpoch, value.CommitTimestamp = 3, 77, -1, time.Now().UnixMilli()
	size := wiretest.BombSize()
	batch := wiretest.ZstdBomb(t, time.Now().UnixMilli(), wiretest.BombRecord{Key: key.AppendTo(nil), Value: value.AppendTo(nil), Zeros: size})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("__admin_client"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = coordinator.OffsetsTopic // Produce v13+ names it by id
	topics, err := adm.ListTopicsWithInternal(ctx, coordinator.OffsetsTopic)
	if err != nil || topics[coordinator.OffsetsTopic].Err != nil {
		t.Fatalf("ListTopics %s: %v %v", coordinator.OffsetsTopic, err, topics[coordinator.OffsetsTopic].Err)
	}
	rt.TopicID = topics[coordinator.OffsetsTopic].ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = coordinator.PartitionFor(group, 50)
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("__admin_client's produce of a %d-byte zstd batch of %d MiB: %v", len(batch), size>>20, kerr.ErrorForCode(code))
	}

	b.Stop(t)
	b.Restart(t)
	_, adm2 := newAdmin(t, b.Addr)
	fetched, err := adm2.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	if o, ok := fetched.Lookup("orders", 0); !ok || o.Err != nil || o.At != 77 {
		t.Fatalf("offset after a restart over the bomb: %+v %v, want 77", o, ok)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.PID()))
	if err != nil {
		t.Skipf("no /proc status to read the peak memory from: %v", err)
	}
	var hwm int64 // VmHWM, KiB
	for line := range strings.SplitSeq(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	t.Logf("restarted broker's peak resident memory after loading a %d MiB record: %d MiB", size>>20, hwm>>10)
	if bound := int64(size>>10) / 2; hwm == 0 || size >= 512<<20 && hwm > bound {
		t.Fatalf("peak resident memory %d KiB, want at most %d KiB (half the record)", hwm, bound)
	}
}
