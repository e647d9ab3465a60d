package config

import (
	"errors"
	"slices"
	"testing"
)

// TestCordonedLogDirs: * cordons every log directory, other entries must
// be log directories, and * stands alone.
func TestCordonedLogDirs(t *testing.T) {
	dirs := []string{"/a", "/b"}
	if got, err := cordonedDirs([]string{"*"}, dirs); err != nil || !slices.Equal(got, dirs) {
		t.Fatalf("* = %v, %v", got, err)
	}
	if got, err := cordonedDirs([]string{"/b"}, dirs); err != nil || !slices.Equal(got, []string{"/b"}) {
		t.Fatalf("/b = %v, %v", got, err)
	}
	if got, err := cordonedDirs(nil, dirs); err != nil || len(got) != 0 {
		t.Fatalf("none = %v, %v", got, err)
	}
	if _, err := cordonedDirs([]string{"/c"}, dirs); !errors.Is(err, ErrInvalid) {
		t.Fatalf("/c: %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"*,/a", "/a,/a"} {
		if validateCordonedLogDirs(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := validateCordonedLogDirs(""); err != nil {
		t.Errorf("empty refused: %v", err)
	}
}
