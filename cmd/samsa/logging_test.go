package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/config"
)

// TestLoggerFormatAndLevel: samsa.log.format=json writes one JSON object
// per line; samsa.log.level=WARN drops INFO; DEBUG logs every setting with
// its source, secrets masked (issue 17, logs).
func TestLoggerFormatAndLevel(t *testing.T) {
	cfg, err := config.Load([]string{"--override", "samsa.log.format=json", "--override", "samsa.log.level=DEBUG",
		"--override", "num.partitions=7"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logger := newLogger(&buf, cfg)
	logEffectiveConfig(logger, cfg)
	found := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		if m["level"] != "DEBUG" || m["msg"] != "setting" {
			t.Fatalf("unexpected line %v", m)
		}
		found[m["name"].(string)] = m
	}
	if len(found) != len(cfg.Values) {
		t.Fatalf("%d settings logged, config has %d", len(found), len(cfg.Values))
	}
	if m := found["num.partitions"]; m["value"] != "7" || !strings.HasPrefix(m["source"].(string), "static") {
		t.Fatalf("num.partitions logged as %v", m)
	}
	if m := found["log.segment.bytes"]; m["source"] != "default" {
		t.Fatalf("log.segment.bytes logged as %v", m)
	}

	cfg, err = config.Load([]string{"--override", "samsa.log.level=WARN"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	logger = newLogger(&buf, cfg)
	logEffectiveConfig(logger, cfg)
	logger.Info("hidden")
	logger.Warn("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, `level=WARN msg=shown`) {
		t.Fatalf("WARN level text logger wrote %q", out)
	}
	if _, err := config.Load([]string{"--override", "samsa.log.format=xml"}, nil); err == nil {
		t.Fatal("samsa.log.format=xml accepted")
	}
}

func TestSecretSettingsMasked(t *testing.T) {
	for _, name := range []string{"ssl.keystore.password", "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config", "ssl.keystore.key"} {
		if !secretSetting(name) {
			t.Errorf("%s not treated as secret", name)
		}
	}
	if secretSetting("num.partitions") {
		t.Error("num.partitions treated as secret")
	}
}

// TestLoggerLevelChangesAtRuntime: loggers derived from the process logger
// (With, WithGroup) share one level, which the broker changes when
// IncrementalAlterConfigs sets the root BROKER_LOGGER.
func TestLoggerLevelChangesAtRuntime(t *testing.T) {
	var buf bytes.Buffer
	logger := newLogger(&buf, nil)
	derived := logger.With("component", "handlers").WithGroup("g")
	h, ok := derived.Handler().(interface{ LevelVar() *slog.LevelVar })
	if !ok {
		t.Fatalf("derived handler %T has no LevelVar", derived.Handler())
	}
	logger.Debug("hidden")
	h.LevelVar().Set(slog.LevelDebug)
	logger.Debug("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "shown") {
		t.Errorf("output %q", out)
	}
}
