package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/wire"
)

// BenchmarkLoadOffsets folds 2000 batches of 10 offset commits (as the
// coordinator writes them: uncompressed) into a load state, per codec the
// batches are in; bytes per second are of the batches read.
func BenchmarkLoadOffsets(b *testing.B) {
	now := time.Now()
	for _, codec := range []wire.Compression{wire.CompressionNone, wire.CompressionZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			var data []byte
			for i := range 2000 {
				recs := make([]wire.Record, 10)
				for j := range recs {
					tp := topicPartition{fmt.Sprintf("topic-%d", j), int32(i % 7)}
					recs[j] = wire.Record{Key: offsetCommitKey(fmt.Sprintf("group-%d", i%50), tp),
						Value: offsetCommitValue(offsetEntry{offset: int64(i), leaderEpoch: -1, commitTime: now})}
				}
				batch, err := wire.EncodeBatch(wire.BatchSpec{BaseOffset: int64(10 * i), BaseTimestamp: now.UnixMilli(),
					ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: codec, Records: recs})
				if err != nil {
					b.Fatal(err)
				}
				data = append(data, batch...)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				ls := newLoadState()
				if next, err := ls.applyBatches(data, 0); err != nil || next != 20_000 {
					b.Fatalf("applyBatches: %d %v", next, err)
				}
			}
		})
	}
}
