package broker

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetaPropertiesDirectoryID: a new log dir's meta.properties carries a
// directory.id, and one written without it (by an earlier build) gets one
// on the next start, which later starts keep: kafka-metadata-quorum
// add-controller reads it as the id of the voter it adds.
func TestMetaPropertiesDirectoryID(t *testing.T) {
	readID := func(dir string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
		if err != nil {
			t.Fatal(err)
		}
		props, err := parseMetaProperties(b, 1)
		if err != nil {
			t.Fatalf("%v in:\n%s", err, b)
		}
		id := props["directory.id"]
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(raw) != 16 || strings.HasPrefix(id, "-") {
			t.Fatalf("directory.id %q: %v", id, err)
		}
		return id
	}
	fresh := t.TempDir()
	cfg := metaTestConfig(t, fresh)
	cfg.NodeID = 1
	if _, err := checkMetaProperties(cfg); err != nil {
		t.Fatal(err)
	}
	first := readID(fresh)
	if _, err := checkMetaProperties(cfg); err != nil {
		t.Fatal(err)
	}
	if again := readID(fresh); again != first {
		t.Fatalf("directory.id changed across starts: %s then %s", first, again)
	}

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "meta.properties"), []byte("version=1\ncluster.id=abc\nnode.id=1"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = metaTestConfig(t, old)
	cfg.NodeID = 1
	if id, err := checkMetaProperties(cfg); err != nil || id != "abc" {
		t.Fatalf("old file: %q %v", id, err)
	}
	added := readID(old)
	if _, err := checkMetaProperties(cfg); err != nil {
		t.Fatal(err)
	}
	if again := readID(old); again != added || again == first {
		t.Fatalf("added directory.id %s, then %s (other dir's %s)", added, again, first)
	}
}
