package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// TestEnsureDirectoryIDs: a meta.properties without directory.id gets a
// new one, which the next start reads back unchanged; two log dirs get
// different ids; a garbled directory.id refuses the start.
func TestEnsureDirectoryIDs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(d, "meta.properties"), []byte("version=1\ncluster.id=abc\nnode.id=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := ensureDirectoryIDs([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if ids[a] == ids[b] || ids[a] == (controller.Uuid{}) || reservedDirectoryID(ids[a]) {
		t.Fatalf("ids %v", ids)
	}
	text, err := os.ReadFile(filepath.Join(a, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "directory.id="+ids[a].String()+"\n") || !strings.Contains(string(text), "node.id=1\n") {
		t.Fatalf("meta.properties:\n%s", text)
	}
	if _, err := parseMetaProperties(text, 1); err != nil {
		t.Fatalf("meta.properties with directory.id no longer parses: %v", err)
	}
	again, err := ensureDirectoryIDs([]string{a, b})
	if err != nil || again[a] != ids[a] || again[b] != ids[b] {
		t.Fatalf("second start: %v %v, want %v", again, err, ids)
	}
	if err := os.WriteFile(filepath.Join(b, "meta.properties"), []byte("version=1\ncluster.id=abc\nnode.id=1\ndirectory.id=nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureDirectoryIDs([]string{a, b}); err == nil {
		t.Fatal("a garbled directory.id was accepted")
	}
}

func TestReplicasByTopicID(t *testing.T) {
	img := controller.EmptyImage("c", 1)
	img.Topics["x"] = &controller.Topic{Name: "x", ID: controller.Uuid{1}}
	img.Topics["y"] = &controller.Topic{Name: "y", ID: controller.Uuid{2}}
	got := replicasByTopicID(img, []storage.TopicPartition{{Topic: "x", Partition: 0}, {Topic: "gone", Partition: 1}, {Topic: "y", Partition: 3}, {Topic: "x", Partition: 2}})
	if len(got) != 2 || got[0].TopicID != (controller.Uuid{1}) || len(got[0].Partitions) != 2 || got[0].Partitions[1] != 2 || got[1].TopicID != (controller.Uuid{2}) {
		t.Fatalf("%+v", got)
	}
}

// TestLogDirFailedMetadataDir: with several log dirs, the failure of the
// one holding the metadata log halts (Kafka's message); another one is
// queued for runLogDirFailures; with a single log dir nothing halts here
// (OnAllLogDirsFailed does).
func TestLogDirFailedMetadataDir(t *testing.T) {
	newDirs := func(n int) []string {
		var dirs []string
		for range n {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "meta.properties"), []byte("version=1\ncluster.id=abc\nnode.id=1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d)
		}
		return dirs
	}
	var halts []string
	halt := func(msg string, err error) { halts = append(halts, msg) }
	dirs := newDirs(2)
	f, err := newLogDirFailures(dirs, dirs[0], halt)
	if err != nil {
		t.Fatal(err)
	}
	f.failed(dirs[1], errors.New("disk"))
	if len(halts) != 0 || <-f.failedDirs != dirs[1] {
		t.Fatalf("a data dir's failure halted (%v) or was not queued", halts)
	}
	f.failed(dirs[0], errors.New("disk"))
	if want := MetadataLogDirFailedMessage(dirs[0]); len(halts) != 1 || halts[0] != want {
		t.Fatalf("halts %q, want [%q]", halts, want)
	}

	halts = nil
	one := newDirs(1)
	f, err = newLogDirFailures(one, one[0], halt)
	if err != nil {
		t.Fatal(err)
	}
	f.failed(one[0], errors.New("disk"))
	if len(halts) != 0 {
		t.Fatalf("a single log dir halted through Halt: %q", halts)
	}
}
