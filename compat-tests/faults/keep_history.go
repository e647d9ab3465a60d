package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keepHistory writes a workload's history h as JSON into the folder keep
// (nothing when keep is empty), named after the test and kind ("group",
// "share"), with the workload's start as wall-clock time (the history's
// times count from it), so that a failure can be laid beside the nodes'
// and clients' logs. A failure to write it is logged, not fatal.
func keepHistory[H any](t *testing.T, keep, kind string, start time.Time, h H) {
	t.Helper()
	if keep == "" {
		return
	}
	path := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_")+"-"+kind+"-history.json")
	if err := writeHistory(path, kind, start, h); err != nil {
		t.Logf("faults: keeping the %s history: %v", kind, err)
	}
}

// writeHistory writes h and the wall-clock start as indented JSON to path.
func writeHistory[H any](path, kind string, start time.Time, h H) error {
	b, err := json.MarshalIndent(struct {
		Start   time.Time
		History H
	}{start.UTC(), h}, "", " ")
	if err != nil {
		return fmt.Errorf("faults: %s history: %w", kind, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("faults: %s history: %w", kind, err)
	}
	return nil
}
