package sharecoord

import (
	"reflect"
	"testing"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// FuzzDecodeRecord: the __share_group_state record decoders never panic
// on any input, and a snapshot value that decodes encodes back to what
// decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	k := testKey("g", 3)
	f.Add(recordKey(recordSnapshot, k))
	f.Add(recordKey(recordUpdate, k))
	f.Add(snapshotValue(&entry{st: share.State{StateEpoch: 1, LeaderEpoch: 2, StartOffset: 3,
		Batches: []share.Batch{{FirstOffset: 3, LastOffset: 5, DeliveryState: share.StateAcknowledged, DeliveryCount: 1}}}, deliveryComplete: 7}))
	f.Add(snapshotValue(&entry{st: share.State{StartOffset: -1}, deliveryComplete: -1}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeKey(b)
		_, _ = decodeUpdate(b)
		e, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		again, err := decodeSnapshot(snapshotValue(e))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, e) {
			t.Fatalf("round trip: %+v, want %+v", again, e)
		}
	})
}

func TestRecordKeyRoundTrip(t *testing.T) {
	for _, typ := range []int16{recordSnapshot, recordUpdate} {
		k := testKey("grp:with:colons", 9)
		gotTyp, got, err := decodeKey(recordKey(typ, k))
		if err != nil || gotTyp != typ || got != k {
			t.Fatalf("decodeKey(recordKey(%d, %+v)) = %d %+v %v", typ, k, gotTyp, got, err)
		}
	}
}
