package quorum

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// raftLogger returns an hclog.Logger for hashicorp/raft that writes to
// logger at the level raft gave each line (hclog's text format starts a
// line with "[LEVEL]").
func raftLogger(logger *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name: "raft", Level: hclog.Info, Output: slogWriter{logger}, DisableTime: true,
	})
}

type slogWriter struct{ logger *slog.Logger }

var hclogLevels = []struct {
	tag   []byte
	level slog.Level
}{
	{[]byte("[ERROR]"), slog.LevelError},
	{[]byte("[WARN]"), slog.LevelWarn},
	{[]byte("[INFO]"), slog.LevelInfo},
	{[]byte("[DEBUG]"), slog.LevelDebug},
	{[]byte("[TRACE]"), slog.LevelDebug},
}

func (w slogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, l := range hclogLevels {
		if rest, ok := bytes.CutPrefix(line, l.tag); ok {
			level, line = l.level, bytes.TrimSpace(rest)
			break
		}
	}
	w.logger.Log(context.Background(), level, string(line))
	return len(p), nil
}
