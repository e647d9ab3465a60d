package coordinator

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
	"github.com/samsa-broker/samsa/wire/wiretest"
)

// TestLoadZipBomb loads a __consumer_offsets partition holding a zstd
// batch of a few KB (Kafka lets a client whose id is __admin_client
// produce one there) whose records hold hundreds of MB: an offset commit
// whose value is followed by 512 MiB of zeros, a group's metadata whose
// member subscription alone is over shards.LoadFieldMax (9 MiB) followed
// by 64 MiB of zeros, and a small commit. The load decompressed each batch
// whole (over 1 GB allocated for this one); it now streams the records,
// each key and value cut at LoadFieldMax: a bounded allocation. The
// commit decodes from its first bytes as Kafka 4.4 decodes it (its
// CoordinatorRecordSerde reads a value's fields and ignores the bytes
// after them); the group metadata does not decode from its first 8 MiB
// and is skipped with an ERROR line; the commits before, in and after the
// batch load.
func TestLoadZipBomb(t *testing.T) {
	size := wiretest.BombSize()
	l := newLogs()
	c := newTestCoordinator(t, l, func(o *Options) { o.NumPartitions = 1 })
	wantCode(t, "commit before", commitCodes(c.OffsetCommit(t.Context(), commitReq("g", "", -1, "orders", map[int32]int64{0: 10})))[0], nil)
	c.Close()

	now := time.Now()
	gm := kmsg.NewGroupMetadataValue()
	gm.Version = 3
	gm.ProtocolType = "consumer"
	gm.Members = []kmsg.GroupMetadataValueMember{{MemberID: "m", ClientID: "c", ClientHost: "h",
		RebalanceTimeoutMillis: 10_000, SessionTimeoutMillis: 10_000, Subscription: make([]byte, 9<<20), Assignment: []byte{}}}
	batch := wiretest.ZstdBomb(t, now.UnixMilli(),
		wiretest.BombRecord{Key: offsetCommitKey("g", topicPartition{"orders", 1}), Value: offsetCommitValue(offsetEntry{offset: 42, leaderEpoch: -1, commitTime: now}), Zeros: size},
		wiretest.BombRecord{Key: groupMetadataKey("g2"), Value: gm.AppendTo(nil), Zeros: size / 8},
		wiretest.BombRecord{Key: offsetCommitKey("g", topicPartition{"orders", 2}), Value: offsetCommitValue(offsetEntry{offset: 7, leaderEpoch: -1, commitTime: now})},
	)
	t.Logf("a %d-byte batch of %d MiB decompressed", len(batch), (size+size/8)>>20)
	if err := l.get(0).Append(batch); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	var c2 *Coordinator
	alloc := wiretest.Allocated(func() {
		c2 = newTestCoordinator(t, l, func(o *Options) {
			o.NumPartitions = 1
			o.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &out}, nil))
		})
	})
	t.Logf("load: %d KiB allocated", alloc>>10)
	// The cut key and value twice (the walk's buffer and the record's
	// copy), a zstd window of 8 MiB, the stream's window.
	if bound := uint64(64 << 20); !wiretest.RaceEnabled && alloc > bound {
		t.Fatalf("the load allocated %d bytes for records of %d bytes, want <= %d", alloc, size, bound)
	}
	if got := fetchAll(t, c2, "g"); len(got) != 3 || got["orders/0"] != 10 || got["orders/1"] != 42 || got["orders/2"] != 7 {
		t.Fatalf("offsets %v, want orders/0=10 orders/1=42 orders/2=7", got)
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g2"}
	if r := c2.DescribeGroups(t.Context(), d); len(r.Groups) != 1 || r.Groups[0].State != "Dead" {
		t.Fatalf("g2 described as %+v, want Dead (its metadata skipped)", r.Groups)
	}
	c2.Close()
	logged := out.String()
	if n := strings.Count(logged, "skipped a record that does not decode"); n != 1 || !strings.Contains(logged, "read up to 8388608 bytes each") {
		t.Fatalf("want one skip line naming the cut; log:\n%s", logged)
	}
}

// TestLoadCompressedKeepsValues: the group metadata a load keeps aliases
// the value it decoded (kmsg's bytes fields: subscriptions, assignments),
// and the records of a compressed batch stream through buffers reused for
// the next record and batch; the load must keep its own copies. Batches
// of each codec, small (decompressed into a pooled buffer) and over 1 MiB
// (streamed), each followed by another that reuses the buffers.
func TestLoadCompressedKeepsValues(t *testing.T) {
	member := func(fill byte, size int) []byte {
		gm := kmsg.NewGroupMetadataValue()
		gm.Version = 3
		gm.ProtocolType = "consumer"
		gm.Members = []kmsg.GroupMetadataValueMember{{MemberID: "m", ClientID: "c", ClientHost: "h",
			RebalanceTimeoutMillis: 10_000, SessionTimeoutMillis: 10_000,
			Subscription: bytes.Repeat([]byte{fill}, size), Assignment: bytes.Repeat([]byte{fill + 1}, 10)}}
		return gm.AppendTo(nil)
	}
	for _, codec := range []wire.Compression{wire.CompressionNone, wire.CompressionGzip, wire.CompressionSnappy, wire.CompressionLZ4, wire.CompressionZstd} {
		for _, size := range []int{100, 1 << 20} {
			var data []byte
			for i := range 3 {
				g := fmt.Sprintf("g%d", i)
				b, err := wire.EncodeBatch(wire.BatchSpec{BaseOffset: int64(2 * i), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: codec,
					Records: []wire.Record{{Key: groupMetadataKey(g), Value: member(byte('a'+2*i), size)}, {Key: groupMetadataKey(g + "-other"), Value: member('z', size)}}})
				if err != nil {
					t.Fatal(err)
				}
				data = append(data, b...)
			}
			ls := newLoadState()
			if next, err := ls.applyBatches(data, 0); err != nil || next != 6 {
				t.Fatalf("%s/%d: applyBatches: %d %v", codec, size, next, err)
			}
			for i := range 3 {
				m := ls.groups[fmt.Sprintf("g%d", i)].Members[0]
				fill := byte('a' + 2*i)
				if !bytes.Equal(m.Subscription, bytes.Repeat([]byte{fill}, size)) || !bytes.Equal(m.Assignment, bytes.Repeat([]byte{fill + 1}, 10)) {
					t.Fatalf("%s/%d: group g%d's member was overwritten: subscription %q..., assignment %q", codec, size, i, m.Subscription[:min(10, len(m.Subscription))], m.Assignment)
				}
			}
		}
	}
}
