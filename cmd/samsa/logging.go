package main

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/samsa-broker/samsa/config"
)

// newLogger builds the process logger from samsa.log.format and
// samsa.log.level. Before the configuration is known (or when it fails to
// load) the default is text at INFO.
func newLogger(w io.Writer, cfg *config.Config) *slog.Logger {
	level := slog.LevelInfo
	format := "text"
	if cfg != nil {
		// The values were validated by their Defs.
		_ = level.UnmarshalText([]byte(cfg.LogLevel))
		format = cfg.LogFormat
	}
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// logEffectiveConfig writes, at DEBUG, one line per setting with its
// effective value and where it came from (default, or the file, environment
// or flag), so that "which of my settings took?" has an answer in the log.
// Values of settings whose name marks them secret are masked.
func logEffectiveConfig(logger *slog.Logger, cfg *config.Config) {
	ctx := context.Background()
	if !logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	names := make([]string, 0, len(cfg.Values))
	for name := range cfg.Values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value := cfg.Values[name]
		if secretSetting(name) {
			value = "[hidden]"
		}
		logger.Debug("setting", "name", name, "value", value, "source", sourceName(cfg.Sources[name]))
	}
}

// secretSetting reports settings whose values must never reach a log line,
// as Kafka's PASSWORD type and JAAS configs.
func secretSetting(name string) bool {
	for _, s := range []string{"password", "jaas.config", "secret", ".key"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

func sourceName(s config.Source) string {
	if s == config.SourceDefault {
		return "default"
	}
	if s == config.SourceStatic {
		return "static (file, environment or flag)"
	}
	return s.String()
}
