package wire

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// frameFor returns a request frame (without size prefix) for key/version
// with the given body.
func frameFor(key, version int16, body []byte) []byte {
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, 1)
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	r := kmsg.RequestForKey(key)
	r.SetVersion(version)
	if r.IsFlexible() {
		frame = append(frame, 0) // no header tags
	}
	return append(frame, body...)
}

// maxDecodeAmplification bounds the bytes a hostile body may make a decode
// allocate, per byte of body (measured: 16x for announced arrays, 43x for
// a struct full of tagged fields).
const maxDecodeAmplification = 48

// Regression (issue 11 item 2): decoders must never allocate per a
// client-announced length without a bound. For every request key and
// version kmsg knows, a 256 KiB body whose first field announces as many
// elements as the bytes could hold (for minimum element sizes up to 32) decodes with less than maxDecodeAmplification bytes allocated per
// body byte.
func TestDecodeAllocationBound(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("walks every key and version; allocation figures need a build without -race")
	}
	const size = 256 << 10
	worst, worstKey, worstVersion := 0.0, int16(0), int16(0)
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			for _, div := range []int{1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32} {
				body := make([]byte, size)
				if req.IsFlexible() {
					binary.PutUvarint(body, uint64(size/div+1))
				} else {
					binary.BigEndian.PutUint32(body, uint32(size/div))
				}
				frame := frameFor(key, v, body)
				n := allocated(func() { ParseRequest(frame) })
				if ratio := float64(n) / size; ratio > worst {
					worst, worstKey, worstVersion = ratio, key, v
				}
			}
		}
	}
	t.Logf("worst: %.1f bytes allocated per body byte (key %d v%d)", worst, worstKey, worstVersion)
	if worst > maxDecodeAmplification {
		t.Fatalf("key %d v%d allocated %.1fx its body", worstKey, worstVersion, worst)
	}
}

// apiVersionsWithTags is an ApiVersions v3 body (empty software name and
// version) with n distinct unknown tagged fields of no data.
func apiVersionsWithTags(n int) []byte {
	body := []byte{1, 1}
	body = binary.AppendUvarint(body, uint64(n))
	for i := range n {
		body = binary.AppendUvarint(body, uint64(i+10))
		body = append(body, 0)
	}
	return body
}

// Kafka 4.4 rejects more than 10,000 tagged fields in a struct and arrays
// of more than 1,000,000 elements (MessageUtil.MAX_TAGGED_FIELD_COUNT and
// the generated readers); so does ParseRequest, as malformed.
func TestDecodeLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		fails bool
	}{{"10000 tags", 10_000, false}, {"10001 tags", 10_001, true}, {"250000 tags", 250_000, true}} {
		frame := frameFor(18, 3, apiVersionsWithTags(tc.n))
		var err error
		n := allocated(func() { _, _, err = ParseRequest(frame) })
		if (err != nil) != tc.fails || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ratio := float64(n) / float64(len(frame)); ratio > maxDecodeAmplification {
			t.Fatalf("%s: allocated %.1fx the frame", tc.name, ratio)
		}
		t.Logf("%s: %d bytes, %d allocated", tc.name, len(frame), n)
	}

	// ListGroups v4: states_filter is a compact array of compact strings,
	// one byte per empty string.
	for _, tc := range []struct {
		n     int
		fails bool
	}{{MaxArrayElements, false}, {MaxArrayElements + 1, true}} {
		body := binary.AppendUvarint(nil, uint64(tc.n+1))
		for range tc.n {
			body = append(body, 1)
		}
		body = append(body, 0) // no tags
		_, req, err := ParseRequest(frameFor(16, 4, body))
		if (err != nil) != tc.fails {
			t.Fatalf("%d elements: %v", tc.n, err)
		}
		if err == nil && len(req.(*kmsg.ListGroupsRequest).StatesFilter) != tc.n {
			t.Fatalf("%d elements decoded as %d", tc.n, len(req.(*kmsg.ListGroupsRequest).StatesFilter))
		}
	}

	// Request header tagged fields are bounded the same way.
	hdrTags := []byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff}
	hdrTags = binary.AppendUvarint(hdrTags, MaxTaggedFields+1)
	for i := range MaxTaggedFields + 1 {
		hdrTags = binary.AppendUvarint(hdrTags, uint64(i))
		hdrTags = append(hdrTags, 0)
	}
	if _, _, err := ParseRequest(append(hdrTags, 1, 1, 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("header with %d tags: %v", MaxTaggedFields+1, err)
	}
}

// FuzzParseRequestAllocation checks that no frame, however built, makes
// ParseRequest allocate more than maxDecodeAmplification times its size
// (plus a constant for the request struct itself).
func FuzzParseRequestAllocation(f *testing.F) {
	f.Add(frameFor(18, 3, apiVersionsWithTags(100)))
	f.Add(frameFor(3, 0, []byte{0, 0, 1, 0, 0, 0}))
	f.Add(frameFor(19, 5, []byte{0x80, 0x80, 0x01, 0, 0}))
	f.Fuzz(func(t *testing.T, frame []byte) {
		n := allocated(func() { ParseRequest(frame) })
		if limit := uint64(maxDecodeAmplification*len(frame) + 64<<10); n > limit {
			t.Fatalf("%d-byte frame allocated %d bytes", len(frame), n)
		}
	})
}

// Regression: the array limit counted the bytes of a bytes field as array
// elements, so a JoinGroup with 1.2 MB of protocol metadata (and any Produce
// whose records exceed 1,000,000 bytes) closed the connection as malformed.
// Kafka bounds a bytes field only by the request size.
func TestDecodeLimitsSkipBytesFields(t *testing.T) {
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(5)
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, 1_200_000)}}
	frame := frameFor(11, 5, join.AppendTo(nil))
	_, req, err := ParseRequest(frame)
	if err != nil {
		t.Fatalf("JoinGroup with 1.2 MB of metadata: %v", err)
	}
	if got := len(req.(*kmsg.JoinGroupRequest).Protocols[0].Metadata); got != 1_200_000 {
		t.Fatalf("metadata decoded as %d bytes", got)
	}
}
