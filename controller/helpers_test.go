package controller

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
)

func testRand(seed uint64) io.Reader {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

// newTestController returns a controller over a MemLog with brokers 1..n
// registered.
func newTestController(t *testing.T, n int, modify ...func(*Options)) *Controller {
	t.Helper()
	o := Options{NodeID: 1, ClusterID: "test-cluster", Log: NewMemLog(), Rand: testRand(1), Logger: quietLogger, DefaultPartitions: 1, DefaultReplicationFactor: 1}
	for _, m := range modify {
		m(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := c.RegisterBroker(Broker{ID: int32(i), Host: "localhost", Port: int32(9090 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func ptr[T any](v T) *T { return &v }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func (u Uuid) bytes() []byte { return u[:] }

// fixCRC recomputes the CRC of a single frame.
func fixCRC(frame []byte) []byte {
	crc := crc32.Checksum(frame[8:], crcTable)
	binary.BigEndian.PutUint32(frame[4:], crc)
	return frame
}

var quietLogger = slog.New(slog.DiscardHandler)
