package controller

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Regression (issue 11 item 8): producer ids came from a broker-local block
// file, and losing it handed out id 0 again. Blocks now come from the
// metadata log (Kafka's AllocateProducerIds / ProducerIdsRecord): they
// never overlap, survive a restart, a floor raises the next id (migration
// of the old file) and never lowers it.
func TestAllocateProducerIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metadata.log")
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	c := newTestController(t, 1, func(o *Options) { o.Log = l })
	first, size, err := c.AllocateProducerIDs(1, 0)
	if err != nil || first != 0 || size != ProducerIDBlockSize {
		t.Fatalf("first block: %d %d %v", first, size, err)
	}
	if first, _, err = c.AllocateProducerIDs(1, 0); err != nil || first != 1000 {
		t.Fatalf("second block: %d %v", first, err)
	}
	if first, _, err = c.AllocateProducerIDs(1, 5500); err != nil || first != 5500 {
		t.Fatalf("floor above: %d %v", first, err)
	}
	if first, _, err = c.AllocateProducerIDs(1, 10); err != nil || first != 6500 {
		t.Fatalf("floor below: %d %v", first, err)
	}
	if _, _, err = c.AllocateProducerIDs(9, 0); !errors.Is(err, kerr.BrokerIDNotRegistered) {
		t.Fatalf("unknown broker: %v", err)
	}
	l.Close()

	l, err = OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c2, err := New(Options{NodeID: 1, ClusterID: "test-cluster", Log: l, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Image().NextProducerID; got != 7500 {
		t.Fatalf("after restart next producer id %d", got)
	}
	if first, _, err = c2.AllocateProducerIDs(1, 0); err != nil || first != 7500 {
		t.Fatalf("after restart: %d %v", first, err)
	}

	// The snapshot carries the next id.
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, c2.Image()); err != nil {
		t.Fatal(err)
	}
	img, err := ReadSnapshot(&buf, EmptyImage("test-cluster", 1))
	if err != nil {
		t.Fatal(err)
	}
	if img.NextProducerID != 8500 {
		t.Fatalf("snapshot next producer id %d", img.NextProducerID)
	}

	// A record that would lower the next id is inapplicable; the int64
	// limit is UNKNOWN_SERVER_ERROR, as in Kafka.
	if _, err := Apply(c2.Image(), ProducerIDsRecord{BrokerID: 1, NextProducerID: 8500}); !errors.Is(err, ErrApply) {
		t.Fatalf("non-growing record: %v", err)
	}
	if _, code, _, _ := decideAllocateProducerIDs(c2.Image(), 1, math.MaxInt64-10); code != kerr.UnknownServerError.Code {
		t.Fatalf("exhausted: code %d", code)
	}
}
