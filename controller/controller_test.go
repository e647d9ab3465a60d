package controller

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func allRecordKinds() []Record {
	id := Uuid{1, 2, 3}
	return []Record{
		RegisterBrokerRecord{BrokerID: 1, Host: "h1", Port: 9092, Rack: ptr("r1")},
		RegisterBrokerRecord{BrokerID: 2, Host: "h2", Port: 9093},
		TopicRecord{Name: "t", ID: id},
		PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
		PartitionRecord{TopicID: id, Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
		PartitionChangeRecord{TopicID: id, Partition: 0, Leader: ptr(int32(2)), ISR: []int32{2}},
		ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "t", Name: "retention.ms", Value: ptr("5")},
		ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "x", Value: ptr("y")},
		ConfigRecord{ResourceType: ConfigResourceGroup, ResourceName: "g", Name: "share.auto.offset.reset", Value: ptr("earliest")},
		ConfigRecord{ResourceType: ConfigResourceClientMetrics, ResourceName: "sub", Name: "interval.ms", Value: ptr("1000")},
		ConfigRecord{ResourceType: ConfigResourceClientMetrics, ResourceName: "sub", Name: "metrics", Value: ptr("a.")},
		ConfigRecord{ResourceType: ConfigResourceClientMetrics, ResourceName: "gone", Name: "match", Value: ptr("client_id=x")},
		ConfigRecord{ResourceType: ConfigResourceClientMetrics, ResourceName: "gone", Name: "match"},
		BrokerFenceRecord{BrokerID: 2, Fenced: true},
		TopicRecord{Name: "gone", ID: Uuid{9}},
		RemoveTopicRecord{ID: Uuid{9}},
		ScramCredentialRecord{Name: "alice", Mechanism: ScramSHA256, ScramCredential: ScramCredential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}},
		ScramCredentialRecord{Name: "alice", Mechanism: ScramSHA512, ScramCredential: ScramCredential{Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192}},
		ScramCredentialRecord{Name: "bob", Mechanism: ScramSHA512, ScramCredential: ScramCredential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}},
		ScramCredentialRecord{Name: "bob", Mechanism: ScramSHA512, Remove: true},
		ACLRecord{ID: Uuid{1}, ResourceType: 2, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, Permission: 3},
		ACLRecord{ID: Uuid{2}, ResourceType: 3, ResourceName: "g-", PatternType: 4, Principal: "User:*", Host: "10.0.0.1", Operation: 2, Permission: 2},
		ACLRecord{ID: Uuid{3}, ResourceType: 4, ResourceName: "kafka-cluster", PatternType: 3, Principal: "User:b", Host: "*", Operation: 9, Permission: 3},
		RemoveACLRecord{ID: Uuid{2}},
		DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: "tok", Owner: "User:a", Requester: "User:b", Renewers: []string{"User:c"}, IssueTimestamp: 1, MaxTimestamp: 3, ExpiryTimestamp: 2}},
		DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: "tok2", Owner: "User:a", Requester: "User:a", IssueTimestamp: 1, MaxTimestamp: 3, ExpiryTimestamp: 2}},
		DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: "tok2"}, Remove: true},
		FeatureLevelRecord{Name: "transaction.version", Level: 1},
		FeatureLevelRecord{Name: "group.version", Level: 0},
	}
}

func TestRecordEncodingRoundTrip(t *testing.T) {
	for _, rec := range allRecordKinds() {
		frame, err := appendFrame(nil, rec)
		if err != nil {
			t.Fatal(err)
		}
		var got []Record
		valid, n, err := scanFrames(bytesReader(frame), func(_ int64, r Record) error { got = append(got, r); return nil })
		if err != nil || n != 1 || valid != int64(len(frame)) {
			t.Fatalf("%T: valid %d n %d err %v", rec, valid, n, err)
		}
		if !reflect.DeepEqual(got[0], rec) {
			t.Fatalf("round trip %#v → %#v", rec, got[0])
		}
	}
}

func TestApply(t *testing.T) {
	img := EmptyImage("c", 1)
	var history []*Image
	for _, rec := range allRecordKinds() {
		history = append(history, img)
		next, err := Apply(img, rec)
		if err != nil {
			t.Fatalf("%T: %v", rec, err)
		}
		img = next
	}
	p := img.Topics["t"].Partitions[0]
	if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 || !equalInt32s(p.ISR, []int32{2}) {
		t.Fatalf("%+v", p)
	}
	if !img.Brokers[2].Fenced || img.Topics["t"].Configs["retention.ms"] != "5" || img.BrokerConfigs[""]["x"] != "y" || img.Topics["gone"] != nil {
		t.Fatalf("%+v", img)
	}
	// Applying the same records as a batch gives the same image, and the
	// older images were not modified along the way.
	batch, err := applyBatch(EmptyImage("c", 1), 0, allRecordKinds())
	if err != nil {
		t.Fatal(err)
	}
	batch.Offset = img.Offset
	if !reflect.DeepEqual(batch, img) {
		t.Fatalf("batch %+v\nsingle %+v", batch, img)
	}
	recs := allRecordKinds()
	for i, old := range history {
		rebuilt, err := applyBatch(EmptyImage("c", 1), 0, recs[:i])
		if err != nil {
			t.Fatal(err)
		}
		rebuilt.Offset = old.Offset
		if !reflect.DeepEqual(rebuilt, old) {
			t.Fatalf("image %d modified:\n%+v\nwant %+v", i, old, rebuilt)
		}
	}
}

func TestApplyRejects(t *testing.T) {
	base, err := applyBatch(EmptyImage("c", 1), 0, allRecordKinds()[:5])
	if err != nil {
		t.Fatal(err)
	}
	id := Uuid{1, 2, 3}
	bad := []Record{
		TopicRecord{Name: "t", ID: Uuid{7}},
		TopicRecord{Name: "u", ID: id},
		TopicRecord{Name: "u"},
		PartitionRecord{TopicID: Uuid{7}, Replicas: []int32{1}},
		PartitionRecord{TopicID: id, Partition: 5, Replicas: []int32{1}},
		PartitionRecord{TopicID: id, Partition: 2},
		PartitionChangeRecord{TopicID: id, Partition: 2},
		ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "nope", Name: "a"},
		ConfigRecord{ResourceType: 9, Name: "a"},
		RemoveTopicRecord{ID: Uuid{7}},
		BrokerFenceRecord{BrokerID: 7},
		RegisterBrokerRecord{BrokerID: -1},
	}
	for _, rec := range bad {
		if _, err := Apply(base, rec); !errors.Is(err, ErrApply) {
			t.Errorf("%#v: err %v", rec, err)
		}
	}
}

func TestRestartFileLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metadata.log")
	open := func() (*Controller, *FileLog) {
		l, err := OpenFileLog(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{NodeID: 1, ClusterID: "c", Log: l, Rand: testRand(2), Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		return c, l
	}
	c, l := open()
	if c.Image().Offset != -1 {
		t.Fatalf("fresh offset %d", c.Image().Offset)
	}
	for i := int32(1); i <= 3; i++ {
		if err := c.RegisterBroker(Broker{ID: i, Host: "h", Port: 9000 + i}); err != nil {
			t.Fatal(err)
		}
	}
	c.CreateTopics([]CreateTopic{{Name: "a", NumPartitions: 3, ReplicationFactor: 2, Configs: map[string]string{"k": "v"}}, {Name: "b", NumPartitions: 1, ReplicationFactor: 3}}, false)
	c.DeleteTopics([]string{"b"}, nil)
	c.CreatePartitions("a", 5, nil, false)
	c.AlterBrokerConfigs("2", []ConfigOp{{Name: "x", Value: ptr("1")}}, false, nil)
	want := c.Image()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c2, l2 := open()
	defer l2.Close()
	if got := c2.Image(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart:\n%+v\nwant\n%+v", got, want)
	}
	// Appends continue at the next offset.
	if err := c2.RegisterBroker(Broker{ID: 4, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	if c2.Image().Offset != want.Offset+1 {
		t.Fatalf("offset %d after %d", c2.Image().Offset, want.Offset)
	}
}

func TestFileLogTornTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metadata.log")
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := allRecordKinds()
	if _, err := l.Append(recs[:3]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recs[3:5]); err != nil {
		t.Fatal(err)
	}
	l.Close()
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lastBatch, _ := appendBatch(nil, recs[3:5])
	goodLen := len(full) - len(lastBatch)

	countRecords := func(l *FileLog) int {
		n := 0
		if err := l.Replay(func(off int64, _ Record) error {
			if off != int64(n) {
				t.Fatalf("offset %d at %d", off, n)
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Every cut inside the last batch, a flipped byte anywhere in it, and
	// zeros after it (blocks a crash left unwritten) drop exactly that
	// batch: both of its records, never one.
	var damaged [][]byte
	for cut := goodLen + 1; cut < len(full); cut++ {
		damaged = append(damaged, full[:cut])
	}
	for i := goodLen; i < len(full); i++ {
		b := append([]byte(nil), full...)
		b[i] ^= 0x40
		damaged = append(damaged, b)
	}
	damaged = append(damaged, append(append([]byte(nil), full[:goodLen]...), 0, 0, 0))
	damaged = append(damaged, append(append([]byte(nil), full[:goodLen+20]...), make([]byte, 4096)...))
	for i, b := range damaged {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenFileLog(path)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if n := countRecords(l); n != 3 {
			t.Fatalf("case %d: %d records, want 3", i, n)
		}
		if l.Truncated() == 0 {
			t.Fatalf("case %d: nothing truncated", i)
		}
		// The log keeps working after the cut, and the new records survive a reopen.
		if last, err := l.Append(recs[3:5]); err != nil || last != 4 {
			t.Fatalf("case %d: append %d %v", i, last, err)
		}
		l.Close()
		l, err = OpenFileLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := countRecords(l); n != 5 || l.Truncated() != 0 {
			t.Fatalf("case %d: %d records after reopen, truncated %d", i, n, l.Truncated())
		}
		l.Close()
	}
}

// Regression (issue 11 item 9): a flipped byte in the middle of the
// metadata log was treated as a torn tail, so everything after it was cut
// off and the broker then deleted the data of every topic it no longer
// found. Damage that a crash cannot have caused (a complete batch follows
// it) now fails the open with ErrCorrupt and leaves the file as it was.
func TestFileLogDamageBeforeTheTailIsCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metadata.log")
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := allRecordKinds()
	for i := range recs {
		if _, err := l.Append(recs[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lastBatch, _ := appendBatch(nil, recs[len(recs)-1:])
	for i := fileHeaderSize; i < len(full)-len(lastBatch); i++ {
		b := append([]byte(nil), full...)
		b[i] ^= 0x01
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenFileLog(path)
		if err == nil {
			l.Close()
			t.Fatalf("flipped byte %d: opened", i)
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
			t.Fatalf("flipped byte %d: the file was changed", i)
		}
	}
}

// Regression (issue 11 item 9): CreateTopics' records were separate frames,
// so a crash in the middle of the append left a topic with some of its
// partitions. Cut the log at every byte of the CreateTopics batch: after
// the restart the topics exist with all their partitions and configs, or
// not at all.
func TestCreateTopicsIsAtomicAcrossTornWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metadata.log")
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	c := newTestController(t, 3, func(o *Options) { o.Log = l })
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	res := c.CreateTopics([]CreateTopic{
		{Name: "a", NumPartitions: 4, ReplicationFactor: 2, Configs: map[string]string{"retention.ms": "1"}},
		{Name: "b", NumPartitions: 3, ReplicationFactor: 3},
	}, false)
	if res[0].ErrorCode != 0 || res[1].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	l.Close()
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for cut := before.Size(); cut <= int64(len(full)); cut++ {
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenFileLog(path)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		c2, err := New(Options{NodeID: 1, ClusterID: "test-cluster", Log: l, Logger: quietLogger})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		img := c2.Image()
		a, b := img.Topics["a"], img.Topics["b"]
		switch {
		case cut == int64(len(full)):
			if a == nil || b == nil || len(a.Partitions) != 4 || len(b.Partitions) != 3 || a.Configs["retention.ms"] != "1" {
				t.Fatalf("intact log: %+v %+v", a, b)
			}
		case a != nil || b != nil:
			t.Fatalf("cut %d: a partial CreateTopics survived: %v %v", cut, a != nil, b != nil)
		}
		l.Close()
	}
}

func TestFileLogHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.log")
	// A file cut inside its header was never appended to: it is reinitialized.
	if err := os.WriteFile(path, []byte("SAMS"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.WriteFile(path, []byte("NOTOURS-FILE-HEADER-AND-MORE"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileLog(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad magic: %v", err)
	}
	b := []byte(fileMagic + "\x00\x03" + "\x00\x00\x00\x00\x00\x00\x00\x00")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileLog(path); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("version 3: %v", err)
	}
}

// A version 1 log (one frame per record) is rewritten as version 2 at
// open, each record a batch of its own, and replays the same records.
func TestFileLogMigratesVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metadata.log")
	recs := allRecordKinds()
	v1 := appendHeader(nil, fileVersionV1, 0)
	for _, rec := range recs {
		v1, _ = appendFrame(v1, rec)
	}
	// A torn frame at the end, as version 1 could leave: dropped.
	torn, _ := appendFrame(nil, recs[0])
	v1 = append(v1, torn[:len(torn)-2]...)
	if err := os.WriteFile(path, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	// A migration that crashed before its rename left its temporary file.
	if err := os.WriteFile(path+migrateSuffix, []byte("half a migration"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Migrated() != int64(len(recs)) {
		t.Fatalf("migrated %d", l.Migrated())
	}
	var got []Record
	if err := l.Replay(func(_ int64, r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(recs)) {
		t.Fatalf("replayed %d records, want %d", len(got), len(recs))
	}
	if last, err := l.Append(recs[:1]); err != nil || last != int64(len(recs)) {
		t.Fatalf("append after migration: %d %v", last, err)
	}
	l.Close()
	if _, err := os.Stat(path + migrateSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
	l, err = OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := 0
	l.Replay(func(int64, Record) error { n++; return nil })
	if n != len(recs)+1 || l.Migrated() != 0 {
		t.Fatalf("reopen: %d records, migrated %d", n, l.Migrated())
	}
}

func TestFileLogUnknownRecordIsNotTruncated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.log")
	l, err := OpenFileLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(allRecordKinds()[:1])
	l.Close()
	batch, _ := appendBatch(nil, allRecordKinds()[:1])
	batch[batchHeader+5] = 99 // unknown type, with a CRC that matches it
	binary.BigEndian.PutUint32(batch[4:], crc32.Checksum(batch[8:], crcTable))
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(batch)
	f.Close()
	if _, err := OpenFileLog(path); !errors.Is(err, ErrUnknownRecord) {
		t.Fatalf("err %v", err)
	}
}

func TestOnChangeOrder(t *testing.T) {
	var (
		mu      sync.Mutex
		changes [][2]*Image
	)
	c := newTestController(t, 1, func(o *Options) {
		o.OnChange = func(prev, next *Image) {
			mu.Lock()
			changes = append(changes, [2]*Image{prev, next})
			mu.Unlock()
		}
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				name := fmt.Sprintf("t-%d-%d", g, i)
				r := c.CreateTopics([]CreateTopic{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)[0]
				if r.ErrorCode != 0 {
					t.Errorf("%+v", r)
					return
				}
				// OnChange for this topic ran before CreateTopics returned.
				mu.Lock()
				last := changes[len(changes)-1][1]
				mu.Unlock()
				if last.Topics[name] == nil {
					t.Errorf("OnChange for %s not delivered before return", name)
				}
			}
		})
	}
	wg.Wait()
	// First the start-up change, then one per broker and one per topic,
	// chained: each change starts from the previous one's image.
	if len(changes) != 1+1+80 {
		t.Fatalf("%d changes", len(changes))
	}
	if changes[0][0].Offset != -1 || len(changes[0][0].Topics) != 0 {
		t.Fatalf("first change not from the empty image")
	}
	for i := 1; i < len(changes); i++ {
		if changes[i][0] != changes[i-1][1] {
			t.Fatalf("change %d does not start where change %d ended", i, i-1)
		}
		if changes[i][1].Offset <= changes[i][0].Offset {
			t.Fatalf("change %d offsets %d→%d", i, changes[i][0].Offset, changes[i][1].Offset)
		}
	}
	if changes[len(changes)-1][1] != c.Image() {
		t.Fatalf("last change is not the current image")
	}
}

func TestConcurrentCreateTopics(t *testing.T) {
	c := newTestController(t, 3)
	const goroutines, topics = 16, 20
	wins := make([][]int, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wins[g] = make([]int, topics)
		wg.Go(func() {
			for i := range topics {
				r := c.CreateTopics([]CreateTopic{{Name: fmt.Sprintf("topic-%d", i), NumPartitions: 2, ReplicationFactor: 3}}, false)[0]
				switch r.ErrorCode {
				case 0:
					wins[g][i]++
				case kerr.TopicAlreadyExists.Code:
				default:
					t.Errorf("%+v", r)
				}
				_ = c.Image().Topics // readers run alongside
			}
		})
	}
	wg.Wait()
	for i := range topics {
		total := 0
		for g := range goroutines {
			total += wins[g][i]
		}
		if total != 1 {
			t.Errorf("topic-%d created %d times", i, total)
		}
	}
	img := c.Image()
	if len(img.Topics) != topics || len(img.TopicsByID) != topics {
		t.Fatalf("%d topics", len(img.Topics))
	}
}

func TestLogFailureIsSticky(t *testing.T) {
	log := NewMemLog()
	c, err := New(Options{NodeID: 1, Log: log, Rand: testRand(3), Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterBroker(Broker{ID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	log.FailAppends(errors.New("disk on fire"))
	r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false)[0]
	if r.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("%+v", r)
	}
	log.FailAppends(nil)
	if err := c.RegisterBroker(Broker{ID: 2, Host: "h", Port: 1}); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("err %v", err)
	}
	if c.Image().Topics["t"] != nil {
		t.Fatal("failed append reached the image")
	}
}

func TestRegisterBroker(t *testing.T) {
	c := newTestController(t, 0)
	for _, b := range []Broker{{ID: -1, Host: "h", Port: 1}, {ID: 1, Port: 1}, {ID: 1, Host: "h"}, {ID: 1, Host: "h", Port: 70000}} {
		if err := c.RegisterBroker(b); !errors.Is(err, ErrInvalidBroker) {
			t.Errorf("%+v: %v", b, err)
		}
	}
	b := Broker{ID: 1, Host: "h", Port: 9092, Rack: ptr("r")}
	if err := c.RegisterBroker(b); err != nil {
		t.Fatal(err)
	}
	off := c.Image().Offset
	if err := c.RegisterBroker(Broker{ID: 1, Host: "h", Port: 9092, Rack: ptr("r")}); err != nil || c.Image().Offset != off {
		t.Fatalf("re-registering unchanged broker appended: %v", err)
	}
	if err := c.RegisterBroker(Broker{ID: 1, Host: "h2", Port: 9092}); err != nil || c.Image().Brokers[1].Host != "h2" {
		t.Fatalf("re-register: %v %+v", err, c.Image().Brokers[1])
	}
	if c.Image().ControllerID != 1 || c.Image().ClusterID != "test-cluster" {
		t.Fatalf("%+v", c.Image())
	}
	if err := c.FenceBroker(5, true); !errors.Is(err, ErrInvalidBroker) {
		t.Fatalf("fence unknown: %v", err)
	}
}

func TestUuid(t *testing.T) {
	r := testRand(4)
	seen := map[Uuid]bool{}
	for range 1000 {
		u := NewUuid(r)
		s := u.String()
		if u.IsZero() || s[0] == '-' || len(s) != 22 || seen[u] {
			t.Fatalf("bad id %s", s)
		}
		seen[u] = true
		back, err := ParseUuid(s)
		if err != nil || back != u {
			t.Fatalf("parse %s: %v %v", s, back, err)
		}
	}
	// A reader that yields a '-'-leading id first, then a good one.
	bad := Uuid{0xf8} // base64 of 0b111110... starts with '-'
	if bad.String()[0] != '-' {
		t.Fatalf("test id %s", bad)
	}
	good := Uuid{1}
	u := NewUuid(bytesReader(append(append(append([]byte{}, Uuid{}.bytes()...), bad.bytes()...), good.bytes()...)))
	if u != good {
		t.Fatalf("got %s", u)
	}
	if _, err := ParseUuid("short"); !errors.Is(err, ErrBadUuid) {
		t.Fatalf("err %v", err)
	}
}

func TestNewCallsOnChangeWithReplayedImage(t *testing.T) {
	log := NewMemLog()
	c, err := New(Options{NodeID: 1, Log: log, Rand: testRand(5), Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	c.RegisterBroker(Broker{ID: 1, Host: "h", Port: 1})
	c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 2, ReplicationFactor: 1}}, false)
	want := c.Image()
	var calls []*Image
	c2, err := New(Options{NodeID: 1, Log: log, Rand: testRand(5), OnChange: func(prev, next *Image) {
		if prev.Offset != -1 || len(prev.Topics) != 0 {
			t.Errorf("prev is not empty: %+v", prev)
		}
		calls = append(calls, next)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != c2.Image() || !reflect.DeepEqual(calls[0], want) {
		t.Fatalf("calls %d", len(calls))
	}
}

func TestReplayRejectsInconsistentLog(t *testing.T) {
	log := NewMemLog()
	if _, err := log.Append([]Record{PartitionRecord{TopicID: Uuid{1}, Replicas: []int32{1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Log: log, Logger: quietLogger}); !errors.Is(err, ErrApply) {
		t.Fatalf("err %v", err)
	}
	if _, err := New(Options{}); !errors.Is(err, ErrOptions) {
		t.Fatalf("err %v", err)
	}
}

func TestImagePublishedAfterOnChange(t *testing.T) {
	var c *Controller
	var checked int
	c = newTestController(t, 1, func(o *Options) {
		o.OnChange = func(prev, next *Image) {
			if c == nil {
				return // the call from New
			}
			if c.Image() != prev {
				t.Errorf("Image() is not prev while OnChange runs")
			}
			checked++
		}
	})
	c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if checked == 0 || c.Image().Topics["t"] == nil {
		t.Fatalf("checked %d", checked)
	}
}

// TestAlterClientMetrics: a KIP-714 subscription is created by its first
// config, kept in the image (and so in snapshots and on every node), and
// removed with its last config; validation and validate-only commit
// nothing.
func TestAlterClientMetrics(t *testing.T) {
	c := newTestController(t, 1)
	v := "1000"
	set := []ConfigOp{{Name: "interval.ms", Value: &v, Op: OpSet}}
	if code, msg := c.AlterClientMetrics("sub", set, true, nil); code != 0 || c.Image().ClientMetrics["sub"] != nil {
		t.Fatalf("validate-only: %d %s %v", code, msg, c.Image().ClientMetrics)
	}
	refuse := func(map[string]string) (int16, string) { return kerr.InvalidConfig.Code, "no" }
	if code, _ := c.AlterClientMetrics("sub", set, false, refuse); code != kerr.InvalidConfig.Code || c.Image().ClientMetrics["sub"] != nil {
		t.Fatalf("refused: %d %v", code, c.Image().ClientMetrics)
	}
	if code, msg := c.AlterClientMetrics("sub", set, false, nil); code != 0 {
		t.Fatalf("set: %d %s", code, msg)
	}
	if got := c.Image().ClientMetrics["sub"]["interval.ms"]; got != "1000" {
		t.Fatalf("image: %v", c.Image().ClientMetrics)
	}
	recs := ImageRecords(c.Image())
	if !slices.ContainsFunc(recs, func(r Record) bool {
		cr, ok := r.(ConfigRecord)
		return ok && cr.ResourceType == ConfigResourceClientMetrics && cr.ResourceName == "sub" && cr.Name == "interval.ms"
	}) {
		t.Errorf("snapshot records lack the subscription: %v", recs)
	}
	if code, msg := c.AlterClientMetrics("sub", []ConfigOp{{Name: "interval.ms", Op: OpDelete}}, false, nil); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	if _, ok := c.Image().ClientMetrics["sub"]; ok {
		t.Errorf("subscription without configs still in the image: %v", c.Image().ClientMetrics)
	}
}
