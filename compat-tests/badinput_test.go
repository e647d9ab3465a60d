package compattests

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// requireClosed waits until the broker closes conn (EOF or reset), failing if it sends
// anything or keeps the connection open for more than 5s.
func requireClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("%s: set deadline: %v", what, err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: connection still open after 5s", what)
	case err == nil:
		t.Errorf("%s: broker answered %d bytes (%x) instead of closing", what, n, buf[:min(n, 32)])
	case errors.Is(err, io.EOF), isReset(err):
	default:
		t.Errorf("%s: unexpected read error %v", what, err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// frame returns a request frame: a 4-byte big-endian size followed by body.
func frame(size int32, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(size))
	return append(out, body...)
}

// TestBadInputClosesOnlyThatConnection sends malformed frames on raw connections: each
// must be closed by the broker while a well-behaved client on another connection keeps
// producing and consuming.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	t.Parallel()
	const maxRequest = 1 << 20
	b := harness.Start(t, harness.Options{Overrides: map[string]string{"socket.request.max.bytes": "1048576"}})
	ctx := testContext(t, 60*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const topic = "bad-input-survivor"
	createTopicKadm(t, ctx, adm, topic, 1, nil)

	good, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic(topic),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer good.Close()
	produced := 0
	roundTrip := func(when string) {
		t.Helper()
		if err := good.ProduceSync(ctx, &kgo.Record{Value: []byte(when)}).FirstErr(); err != nil {
			t.Fatalf("%s: good client produce: %v", when, err)
		}
		produced++
		fs := good.PollRecords(ctx, 1)
		if ctx.Err() != nil {
			t.Fatalf("%s: good client consume: %v", when, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("%s: good client fetch: %v", when, err) })
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != when {
			t.Errorf("%s: good client consumed %d records, want its own %q", when, len(recs), when)
		}
	}
	roundTrip("before")

	// A v2 request header for ApiVersions v3: api key, version, correlation id, client id.
	header := []byte{0, 18, 0, 3, 0, 0, 0, 7, 0, 4, 't', 'e', 's', 't'}
	cases := []struct {
		name  string
		bytes []byte
	}{
		// An HTTP request read as a frame size is 0x47455420 bytes, far over the limit.
		{"http request", []byte("GET / HTTP/1.1\r\nHost: samsa\r\n\r\n")},
		// One byte over socket.request.max.bytes; the body is never sent, so the broker
		// must decide from the size alone rather than wait for a megabyte.
		{"oversized frame", frame(maxRequest+1, nil)},
		{"negative frame size", frame(-5, []byte{1, 2, 3})},
		// A complete frame whose content is random bytes: api key 0x9c41 does not exist.
		{"garbage frame", frame(16, []byte{0x9c, 0x41, 0xff, 0x13, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08})},
		// A known key with a header cut short inside the client id.
		{"truncated header", frame(8, []byte{0, 18, 0, 3, 0, 0, 0, 9})},
		// A valid header for an API key samsa does not serve (key 1000).
		{"unknown api key", frame(int32(len(header)), append([]byte{0x03, 0xe8}, header[2:]...))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.Close()
			if _, err := conn.Write(c.bytes); err != nil {
				t.Fatalf("write: %v", err)
			}
			requireClosed(t, conn, c.name)
			roundTrip("after " + c.name)
		})
	}

	// A frame that announces more bytes than it sends, with the client then going
	// silent: the broker must not stop serving others while it waits.
	conn, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write(frame(1000, header)); err != nil {
		t.Fatalf("write: %v", err)
	}
	roundTrip("during a stalled partial frame")

	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("kadm ListEndOffsets: %v", err)
	}
	if e, _ := ends.Lookup(topic, 0); e.Offset != int64(produced) {
		t.Errorf("end offset %d, want %d", e.Offset, produced)
	}
}
