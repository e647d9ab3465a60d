package handlers

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

// FileFetch is a Fetch response whose record batches stay in the segment
// files: the connection encodes the framing around them and hands each
// range to the socket (sendfile on plaintext TCP, a bounded copy
// otherwise), so that fetch memory is proportional to the framing, not to
// the data. handleFetch returns one only when Request.SendFiles is set and
// at least one partition has records.
//
// The RecordBatches of a partition named in Files are empty here; its
// bytes are Files[i].Slice. Every slice pins its segment until Release,
// which the connection calls once the response is written (or dropped).
type FileFetch struct {
	*kmsg.FetchResponse
	Files []PartitionFile
}

// PartitionFile is the record range of one partition of a FileFetch:
// FetchResponse.Topics[Topic].Partitions[Partition]. Files are in
// response order (by Topic, then Partition).
type PartitionFile struct {
	Topic, Partition int
	Slice            storage.FileSlice
}

// Release unpins every range. It is safe to call more than once.
func (f *FileFetch) Release() {
	for i := range f.Files {
		f.Files[i].Slice.Release()
	}
}

// FileBytes returns the record bytes of Topics[topic] that are in file
// ranges (for the metrics' BytesOut, which add len(RecordBatches) for the
// rest). Files are in response order, so this is a binary search.
func (f *FileFetch) FileBytes(topic int) int {
	n := 0
	for i := sort.Search(len(f.Files), func(i int) bool { return f.Files[i].Topic >= topic }); i < len(f.Files) && f.Files[i].Topic == topic; i++ {
		n += int(f.Files[i].Slice.Length)
	}
	return n
}

// Fetch returns the response without its file ranges.
func (f *FileFetch) Fetch() *kmsg.FetchResponse { return f.FetchResponse }
