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
	levelVar := new(slog.LevelVar)
	levelVar.Set(level)
	opts := &slog.HandlerOptions{Level: levelVar}
	if format == "json" {
		return slog.New(levelHandler{slog.NewJSONHandler(w, opts), levelVar})
	}
	return slog.New(levelHandler{slog.NewTextHandler(w, opts), levelVar})
}

// levelHandler is the process's log handler with its level in a LevelVar,
// which it hands out (LevelVar) to loggers derived from it: the broker
// changes the level at runtime when IncrementalAlterConfigs sets the root
// BROKER_LOGGER (broker/handlers/broker_logger.go).
type levelHandler struct {
	slog.Handler
	level *slog.LevelVar
}

// WithAttrs keeps the level with the derived handler.
func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{h.Handler.WithAttrs(attrs), h.level}
}

// WithGroup keeps the level with the derived handler.
func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{h.Handler.WithGroup(name), h.level}
}

// LevelVar returns the level shared by every logger of the process.
func (h levelHandler) LevelVar() *slog.LevelVar { return h.level }

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
