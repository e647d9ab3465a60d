package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestHaltOnLogDirFailure: the callback logs Kafka's message at ERROR and
// exits with code 1.
func TestHaltOnLogDirFailure(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	code := -1
	halt := haltOnLogDirFailure(logger, func(c int) { code = c })
	halt([]string{"/data/a", "/data/b"}, errors.New("no space left on device"))
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	out := buf.String()
	for _, want := range []string{"level=ERROR", "Shutdown broker because all log dirs in /data/a, /data/b have failed", "no space left on device"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}

// TestHaltOnNodeFailure: the Halt callback logs its message at ERROR and
// exits with code 1.
func TestHaltOnNodeFailure(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	code := -1
	halt := haltOnNodeFailure(logger, func(c int) { code = c })
	halt("Shutdown broker because the metadata log dir /data/a has failed", errors.New("input/output error"))
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	out := buf.String()
	for _, want := range []string{"level=ERROR", "Shutdown broker because the metadata log dir /data/a has failed", "input/output error"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}
