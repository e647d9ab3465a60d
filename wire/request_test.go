package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

func TestParseRequestRoundTrip(t *testing.T) {
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = -1
	produce.TimeoutMillis = 5000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 3
	pp.Records = mustBatch(t, testSpec(CompressionNone, 2))
	tp.Partitions = append(tp.Partitions, pp)
	produce.Topics = append(produce.Topics, tp)

	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = strp("orders")
	meta.Topics = append(meta.Topics, mt)

	cases := []struct {
		name     string
		req      kmsg.Request
		version  int16
		clientID *string
	}{
		{"apiversions v0", kmsg.NewPtrApiVersionsRequest(), 0, strp("c")},
		{"apiversions v3 flexible", kmsg.NewPtrApiVersionsRequest(), 3, strp("franz-go")},
		{"produce v3", produce, 3, strp("producer")},
		{"produce v9 flexible null client", produce, 9, nil},
		{"metadata v1", meta, 1, strp("")},
		{"metadata v12", meta, 12, strp("x")},
		{"controlled shutdown v0", kmsg.NewPtrControlledShutdownRequest(), 0, nil},
		{"controlled shutdown v1", kmsg.NewPtrControlledShutdownRequest(), 1, strp("admin")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := RequestHeader{APIVersion: tc.version, CorrelationID: 77, ClientID: tc.clientID}
			frame := AppendRequest(nil, hdr, tc.req)
			if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
				t.Fatal("bad size prefix")
			}
			got, req, err := ParseRequest(frame[4:])
			if err != nil {
				t.Fatal(err)
			}
			if got.APIKey != tc.req.Key() || got.APIVersion != tc.version || got.CorrelationID != 77 ||
				(got.ClientID == nil) != (tc.clientID == nil) || (got.ClientID != nil && *got.ClientID != *tc.clientID) {
				t.Fatalf("header %+v", got)
			}
			if req.GetVersion() != tc.version {
				t.Fatalf("version %d", req.GetVersion())
			}
			if !bytes.Equal(req.AppendTo(nil), tc.req.AppendTo(nil)) {
				t.Fatal("body did not round trip")
			}
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	frame := AppendRequest(nil, RequestHeader{APIVersion: 3, CorrelationID: 9, ClientID: strp("cli")}, kmsg.NewPtrApiVersionsRequest())[4:]

	// Unsupported version: header still filled.
	bad := append([]byte(nil), frame...)
	binary.BigEndian.PutUint16(bad[2:], 999)
	hdr, req, err := ParseRequest(bad)
	if !errors.Is(err, ErrUnsupportedVersion) || req != nil || hdr.APIKey != 18 || hdr.APIVersion != 999 || hdr.CorrelationID != 9 ||
		hdr.ClientID == nil || *hdr.ClientID != "cli" {
		t.Fatalf("unsupported: %+v %v", hdr, err)
	}
	binary.BigEndian.PutUint16(bad[2:], 0xffff) // -1
	if _, _, err := ParseRequest(bad); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("version -1: %v", err)
	}

	// Unknown key.
	bad = append([]byte(nil), frame...)
	binary.BigEndian.PutUint16(bad[0:], 30000)
	hdr, req, err = ParseRequest(bad)
	if !errors.Is(err, ErrUnknownAPIKey) || req != nil || hdr.APIKey != 30000 || hdr.CorrelationID != 9 {
		t.Fatalf("unknown key: %+v %v", hdr, err)
	}

	// Every truncation of a flexible request with a body is malformed.
	produce := AppendRequest(nil, RequestHeader{APIVersion: 9, ClientID: strp("p")}, func() kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		tp.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: []byte("abc")}}
		r.Topics = append(r.Topics, tp)
		return r
	}())[4:]
	for n := range len(produce) {
		if _, _, err := ParseRequest(produce[:n]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	// Bad client id length.
	bad = append([]byte(nil), frame...)
	binary.BigEndian.PutUint16(bad[8:], 0x7000)
	if _, _, err := ParseRequest(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("client id: %v", err)
	}
}

func TestAppendResponse(t *testing.T) {
	// ApiVersions v3 is flexible but its response header stays v0.
	av := kmsg.NewPtrApiVersionsResponse()
	out := AppendResponse([]byte("prefix"), RequestHeader{APIKey: 18, APIVersion: 3, CorrelationID: 5}, av)
	out = out[len("prefix"):]
	if int(binary.BigEndian.Uint32(out)) != len(out)-4 || binary.BigEndian.Uint32(out[4:]) != 5 {
		t.Fatalf("frame %x", out)
	}
	back := kmsg.NewPtrApiVersionsResponse()
	back.SetVersion(3)
	if err := back.ReadFrom(out[8:]); err != nil {
		t.Fatalf("apiversions body right after correlation id: %v", err)
	}
	if av.GetVersion() != 3 {
		t.Fatal("version not set")
	}

	// Metadata v9 is flexible: one empty tagged-fields byte after the correlation id.
	md := kmsg.NewPtrMetadataResponse()
	out = AppendResponse(nil, RequestHeader{APIKey: 3, APIVersion: 9, CorrelationID: 6}, md)
	if out[8] != 0 || !bytes.Equal(out[9:], md.AppendTo(nil)) {
		t.Fatalf("metadata v9 frame %x", out)
	}
	// Metadata v8 is not.
	out = AppendResponse(nil, RequestHeader{APIKey: 3, APIVersion: 8, CorrelationID: 6}, md)
	if !bytes.Equal(out[8:], md.AppendTo(nil)) {
		t.Fatalf("metadata v8 frame %x", out)
	}
}

func TestParseRequestHeaderTags(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "samsa-test"
	body := func() []byte { req.SetVersion(3); return req.AppendTo(nil) }()
	// key 18, v3, correlation 1, client id "c", two header tags, body.
	frame := []byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'c', 2, 0, 2, 'h', 'i', 5, 0}
	frame = append(frame, body...)
	hdr, got, err := ParseRequest(frame)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.CorrelationID != 1 || got.(*kmsg.ApiVersionsRequest).ClientSoftwareName != "samsa-test" {
		t.Fatalf("%+v %+v", hdr, got)
	}
	// A tag whose size runs past the frame is malformed.
	bad := []byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'c', 1, 0, 100, 'h'}
	if _, _, err := ParseRequest(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad tag: %v", err)
	}
}
