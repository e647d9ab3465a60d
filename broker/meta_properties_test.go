package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/config"
)

func metaTestConfig(t *testing.T, dirs ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load([]string{"--override", "log.dirs=" + strings.Join(dirs, ",")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Regression (issue 11 item 9): a log dir that held data but whose
// meta.properties was lost (or garbled) got a freshly generated cluster id
// and its data was adopted. It now refuses the start with a message that
// names the dir and says what to do; a new, empty dir is still formatted.
func TestMetaPropertiesRefusesDataWithoutIt(t *testing.T) {
	fresh := t.TempDir()
	if err := os.WriteFile(filepath.Join(fresh, ".lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := metaTestConfig(t, fresh)
	id, err := checkMetaProperties(cfg)
	if err != nil || id == "" {
		t.Fatalf("empty dir: %q %v", id, err)
	}
	// The same dir again: the id it was given is read back.
	if again, err := checkMetaProperties(cfg); err != nil || again != id {
		t.Fatalf("restart: %q %v, want %q", again, err, id)
	}

	// A dir with data and no meta.properties, alone or beside a good dir.
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "orders-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dirs := range [][]string{{data}, {fresh, data}} {
		_, err := checkMetaProperties(metaTestConfig(t, dirs...))
		if !errors.Is(err, ErrMetaProperties) || !strings.Contains(err.Error(), data) || !strings.Contains(err.Error(), "orders-0") {
			t.Fatalf("%v: %v", dirs, err)
		}
		if _, statErr := os.Stat(filepath.Join(data, "meta.properties")); !errors.Is(statErr, os.ErrNotExist) {
			t.Fatalf("%v: meta.properties was written into the dir with data", dirs)
		}
	}

	// Garbled files.
	for _, text := range []string{
		"",
		"\x00\x00\x00\x00",
		"version=1\nnode.id=1\n",
		"version=1\ncluster.id=\nnode.id=1\n",
		"cluster.id=abc\nnode.id=1\n",
		"version=7\ncluster.id=abc\nnode.id=1\n",
		"version=1\ncluster.id=abc\n",
		"version=1\ncluster.id=abc\nnode.id=1\ngarbage line\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := checkMetaProperties(metaTestConfig(t, dir)); !errors.Is(err, ErrMetaProperties) {
			t.Fatalf("%q: %v", text, err)
		}
	}
}
