package broker

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCleanShutdownMarker: the epoch written at a clean shutdown is read
// back once (the marker is removed, so a crash of the next incarnation
// reads -1), and a dir without the marker, a damaged marker or dirs that
// disagree read as an unclean shutdown.
func TestCleanShutdownMarker(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	take := func() int64 {
		t.Helper()
		e, err := takeCleanShutdown(dirs)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := take(); e != -1 {
		t.Fatalf("first start: %d", e)
	}
	if err := writeCleanShutdown(dirs, 42); err != nil {
		t.Fatal(err)
	}
	if e := take(); e != 42 {
		t.Fatalf("after a clean shutdown: %d", e)
	}
	if e := take(); e != -1 {
		t.Fatalf("marker read twice: %d", e)
	}
	for name, setup := range map[string]func(){
		"one dir without": func() { os.Remove(filepath.Join(dirs[1], cleanShutdownFile)) },
		"damaged":         func() { os.WriteFile(filepath.Join(dirs[0], cleanShutdownFile), []byte("{"), 0o644) },
		"newer version": func() {
			os.WriteFile(filepath.Join(dirs[0], cleanShutdownFile), []byte(`{"version":2,"broker_epoch":42}`), 0o644)
		},
		"disagreeing": func() {
			if err := writeCleanShutdown(dirs[1:], 7); err != nil {
				t.Fatal(err)
			}
		},
	} {
		if err := writeCleanShutdown(dirs, 42); err != nil {
			t.Fatal(err)
		}
		setup()
		if e := take(); e != -1 {
			t.Fatalf("%s: %d", name, e)
		}
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, cleanShutdownFile)); !os.IsNotExist(err) {
				t.Fatalf("%s: marker left in %s: %v", name, d, err)
			}
		}
	}
}
