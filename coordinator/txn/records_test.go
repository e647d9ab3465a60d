package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// unhex decodes golden bytes laid out as the schema: on each line, the
// leading groups of hex digits, up to the first word that is not one (the
// comment naming the field).
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for line := range strings.SplitSeq(s, "\n") {
		for _, f := range strings.Fields(line) {
			b, err := hex.DecodeString(f)
			if err != nil {
				break
			}
			out = append(out, b...)
		}
	}
	return out
}

func testMeta() *txnMeta {
	m := newTxnMeta("tx", 5, 60000, 1000)
	m.epoch = 2
	m.state = Ongoing
	m.startMs = 900
	m.partitions = map[TopicPartition]struct{}{tp("t", 1): {}, tp("t", 0): {}}
	return m
}

// TestRecordsGolden checks the records against TransactionLogKey v0 and
// TransactionLogValue v0/v1 as Kafka's schema lays them out, field by
// field, written by hand from the schema rather than by kmsg.
func TestRecordsGolden(t *testing.T) {
	if got, want := txnKey("tx"), unhex(t, "0000  0002 7478"); !bytes.Equal(got, want) {
		t.Fatalf("key = %x, want %x", got, want)
	}

	ongoing := unhex(t, `
		0000               version 0
		0000000000000005   producer_id
		0002               producer_epoch
		0000ea60           transaction_timeout_ms 60000
		01                 transaction_status Ongoing
		00000001           transaction_partitions: 1 topic
		0001 74            topic "t"
		00000002 00000000 00000001  partition_ids [0 1]
		00000000000003e8   transaction_last_update_timestamp_ms 1000
		0000000000000384   transaction_start_timestamp_ms 900`)
	if got := logValue(testMeta()); !bytes.Equal(got, ongoing) {
		t.Fatalf("ongoing value\n got %x\nwant %x", got, ongoing)
	}

	m := testMeta()
	m.resetEmpty(60000, 1000)
	empty := unhex(t, `
		0000 0000000000000005 0002 0000ea60
		00                 Empty
		ffffffff           transaction_partitions null
		00000000000003e8 ffffffffffffffff`)
	if got := logValue(m); !bytes.Equal(got, empty) {
		t.Fatalf("empty value\n got %x\nwant %x", got, empty)
	}

	m = testMeta()
	m.state = PrepareCommit
	m = m.complete(1000)
	m.prevProducerID = 4
	v1 := unhex(t, `
		0001               version 1 (flexible)
		0000000000000005 0002 0000ea60
		04                 CompleteCommit
		01                 compact array of 0 topics
		00000000000003e8 0000000000000384
		01                 one tagged field
		00 08 0000000000000004  tag 0 previous_producer_id, 8 bytes`)
	if got := logValue(m); !bytes.Equal(got, v1) {
		t.Fatalf("v1 value\n got %x\nwant %x", got, v1)
	}

	// Decoding gives the state back, v1 topics included.
	m = testMeta()
	m.prevProducerID = 4
	got, err := decodeValue("tx", logValue(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.prevProducerID != 4 || got.producerID != 5 || got.epoch != 2 || got.state != Ongoing || len(got.partitions) != 2 || got.startMs != 900 || got.updateMs != 1000 || got.lastEpoch != -1 {
		t.Fatalf("decoded %+v", got)
	}
}

func TestDecodeValueErrors(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.State = 9
	if _, err := decodeValue("x", v.AppendTo(nil)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown state: %v", err)
	}
	if _, err := decodeValue("x", []byte{0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short: %v", err)
	}
	if _, err := decodeValue("x", logValue(testMeta())[:20]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestLoadStateApply(t *testing.T) {
	ls := &loadState{txns: map[string]*txnMeta{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	m := testMeta()
	must(ls.apply(txnKey("tx"), logValue(m)))
	m.state = PrepareEpochFence
	must(ls.apply(txnKey("fence"), logValue(m)))
	must(ls.apply([]byte{0, 1, 0, 0}, []byte("a newer key version is skipped")))
	if len(ls.txns) != 2 || ls.txns["fence"].state != PrepareAbort {
		t.Fatalf("after apply %v", ls.txns)
	}
	m.state = Dead
	must(ls.apply(txnKey("fence"), logValue(m)))
	must(ls.apply(txnKey("tx"), nil))
	if len(ls.txns) != 0 {
		t.Fatalf("dead and tombstone left %v", ls.txns)
	}
	if err := ls.apply([]byte{0}, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short key: %v", err)
	}
	if err := ls.apply([]byte{0, 0, 0, 9, 'x'}, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad key: %v", err)
	}

	// applyBatches stops at a partial batch and reports where it ended.
	b, err := encodeBatch(testClockStart, []wire.Record{{Key: txnKey("tx"), Value: logValue(testMeta())}})
	must(err)
	next, err := ls.applyBatches(append(b, b[:30]...), 0)
	must(err)
	if next != 1 || ls.txns["tx"] == nil {
		t.Fatalf("next %d, txns %v", next, ls.txns)
	}
}

// TestLoadSkipsGarbageRecords is the regression test for issue 11 item 7
// on __transaction_state: one record that did not decode failed the load of
// its partition at every start (COORDINATOR_NOT_AVAILABLE forever for every
// transactional id there). It is now skipped with an ERROR line naming its
// offset, and the transactions before and after it load.
func TestLoadSkipsGarbageRecords(t *testing.T) {
	e := newEnv(t)
	p := e.c.PartitionFor("before")
	pid, epoch := e.init("before", 60_000)
	e.c.Close()

	bad := kmsg.NewTxnMetadataValue()
	bad.State = 9 // no such state
	garbage, err := encodeBatch(testClockStart, []wire.Record{
		{Key: txnKey("garbage-state"), Value: bad.AppendTo(nil)},
		{Key: []byte{0, 0, 0, 9, 'x'}, Value: []byte("key that does not decode")},
		{Key: []byte{0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.logs[p].Append(garbage); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	e.opts.Logger = slog.New(slog.NewTextHandler(&out, nil))
	e.start()
	// The id written before the garbage is there; new ids work in the partition.
	if m, _ := e.meta("before"); m == nil || m.producerID != pid || m.epoch != epoch {
		t.Fatalf("before: %+v, want producer %d epoch %d", m, pid, epoch)
	}
	for i := 0; ; i++ {
		id := fmt.Sprintf("after-%d", i)
		if e.c.PartitionFor(id) != p {
			continue
		}
		e.init(id, 60_000)
		break
	}
	e.c.Close()
	logged := out.String()
	if n := strings.Count(logged, "level=ERROR msg=\"txn: skipped a record that does not decode"); n != 3 {
		t.Errorf("%d skip lines, want 3:\n%s", n, logged)
	}
	if !strings.Contains(logged, "offset=") || strings.Contains(logged, "loading partition failed") {
		t.Errorf("log:\n%s", logged)
	}
}
