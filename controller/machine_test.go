package controller

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// allKindsImage is the image that allRecordKinds builds, at offset 10.
func allKindsImage(t *testing.T) *Image {
	t.Helper()
	img, err := applyBatch(EmptyImage("c", 1), 0, allRecordKinds())
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, img := range []*Image{EmptyImage("c", 1), allKindsImage(t)} {
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, img); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), EmptyImage("c", 1))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, img) {
			t.Fatalf("snapshot round trip:\n got %+v\nwant %+v", got, img)
		}
	}
}

// TestSnapshotTruncated: every cut of a snapshot is refused (a snapshot
// that silently lost its tail would drop topics).
func TestSnapshotTruncated(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, allKindsImage(t)); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	for n := 0; n < len(full); n++ {
		if _, err := ReadSnapshot(bytes.NewReader(full[:n]), EmptyImage("c", 1)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("snapshot cut at %d of %d: err %v, want ErrCorrupt", n, len(full), err)
		}
	}
	bad := slices.Clone(full)
	bad[len(snapshotMagic)+1] = 9 // version 9
	if _, err := ReadSnapshot(bytes.NewReader(bad), EmptyImage("c", 1)); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("newer snapshot version: %v", err)
	}
}

// TestSnapshotCoversImage fails when Image gains a field: ImageRecords
// (and so every snapshot) must then learn to carry it.
func TestSnapshotCoversImage(t *testing.T) {
	var fields []string
	for f := range reflect.TypeFor[Image]().Fields() {
		fields = append(fields, f.Name)
	}
	want := []string{"Offset", "ClusterID", "ControllerID", "Brokers", "Topics", "TopicsByID", "BrokerConfigs", "NextProducerID", "ScramCredentials", "DelegationTokens", "ACLs", "ClientQuotas", "LogDirs", "GroupConfigs", "ClientMetrics", "Features"}
	if !slices.Equal(fields, want) {
		t.Fatalf("Image fields %v, snapshot covers %v: extend ImageRecords, then this list", fields, want)
	}
}

func TestMachineStaleBatch(t *testing.T) {
	m := NewMachine("c", 1)
	reg := []Record{RegisterBrokerRecord{BrokerID: 1, Host: "h", Port: 1}}
	if err := m.Apply(-1, reg); err != nil {
		t.Fatal(err)
	}
	// A batch decided against the empty image, committed after the first:
	// applying it would register the broker twice from a stale decision.
	if err := m.Apply(-1, reg); !errors.Is(err, ErrStale) {
		t.Fatalf("stale batch: %v", err)
	}
	if got := m.Image().Offset; got != 0 {
		t.Fatalf("offset %d after a rejected batch, want 0", got)
	}
	// A batch the image cannot apply changes nothing.
	if err := m.Apply(0, []Record{RemoveTopicRecord{ID: Uuid{7}}}); !errors.Is(err, ErrApply) {
		t.Fatalf("bad batch: %v", err)
	}
	if got := m.Image().Offset; got != 0 {
		t.Fatalf("offset %d after a rejected batch, want 0", got)
	}
}

func TestEntryEncoding(t *testing.T) {
	recs := allRecordKinds()
	entry, err := EncodeEntry(41, recs)
	if err != nil {
		t.Fatal(err)
	}
	base, got, err := DecodeEntry(entry)
	if err != nil || base != 41 || !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: base %d err %v\n got %v", base, err, got)
	}
	for n := 0; n < len(entry); n++ {
		if _, _, err := DecodeEntry(entry[:n]); err == nil {
			t.Fatalf("entry cut at %d of %d decoded", n, len(entry))
		}
	}
	bad := slices.Clone(entry)
	bad[len(bad)-2] ^= 0xff
	if _, _, err := DecodeEntry(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped byte: %v", err)
	}
}
