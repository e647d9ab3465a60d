package handlers

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BROKER_LOGGER resources: Kafka lists each of its log4j loggers (Java
// class names, and root) with its level, source
// DYNAMIC_BROKER_LOGGER_CONFIG, and lets IncrementalAlterConfigs change
// them on the node that receives the request (never forwarded; not
// stored: a restart returns to the configured levels). samsa has a single
// logger, listed as root, whose level starts at samsa.log.level.

// rootLogger is the name Kafka gives its root log4j logger.
const rootLogger = "root"

// levelVarHandler is implemented by a log handler whose level can change
// at runtime (cmd/samsa's); without one the root logger is read-only.
type levelVarHandler interface{ LevelVar() *slog.LevelVar }

// logLevelVar returns the process's log level, if it can change.
func (d *Deps) logLevelVar() (*slog.LevelVar, bool) {
	if d.Logger == nil {
		return nil, false
	}
	h, ok := d.Logger.Handler().(levelVarHandler)
	if !ok {
		return nil, false
	}
	return h.LevelVar(), true
}

// log4jLevels maps Kafka's (log4j's) level names to slog levels: TRACE
// below DEBUG and FATAL above ERROR, the gaps slog leaves for them.
var log4jLevels = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4,
}

// log4jName returns Kafka's name of level l.
func log4jName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "TRACE"
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	case l < slog.LevelError+4:
		return "ERROR"
	}
	return "FATAL"
}

// loggerNodeID checks a BROKER_LOGGER resource name as Kafka does: a
// node id, which must be this node's. emptyMsg is Kafka's message for "",
// which differs between DescribeConfigs and IncrementalAlterConfigs.
func loggerNodeID(d *Deps, name, emptyMsg string) (int16, string) {
	if name == "" && emptyMsg != "" {
		return kerr.InvalidRequest.Code, emptyMsg
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != d.Config.NodeID {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", d.Config.NodeID, name)
	}
	return 0, ""
}

// describeBrokerLoggers answers DescribeConfigs of a BROKER_LOGGER
// resource: root, with the current level. It is read-only when the level
// cannot change (no LevelVar, as in tests that build Deps by hand).
func describeBrokerLoggers(d *Deps, name string) ([]configEntry, int16, string) {
	if code, msg := loggerNodeID(d, name, "Broker id must not be empty"); code != 0 {
		return nil, code, msg
	}
	level := d.Config.LogLevel
	if level == "" {
		level = "INFO"
	}
	lv, dynamic := d.logLevelVar()
	if dynamic {
		level = log4jName(lv.Level())
	}
	return []configEntry{{
		name:     rootLogger,
		value:    &level,
		readOnly: !dynamic,
		source:   kmsg.ConfigSourceDynamicBrokerLoggerConfig,
		typ:      kmsg.ConfigTypeUnknown,
	}}, 0, ""
}

// alterBrokerLoggers applies IncrementalAlterConfigs to a BROKER_LOGGER
// resource, with Kafka's answers: APPEND and SUBTRACT are INVALID_REQUEST,
// so is DELETE of root (Kafka's root cannot be removed; samsa has no other
// logger); an unknown logger or a level outside TRACE, DEBUG, INFO, WARN,
// ERROR, FATAL (upper case) is INVALID_CONFIG. The level changes at once
// unless validateOnly, for this process only, until it restarts.
func alterBrokerLoggers(d *Deps, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	if code, msg := loggerNodeID(d, res.ResourceName, ""); code != 0 {
		if res.ResourceName == "" {
			msg = "Node id must be an integer, but it is: "
		}
		return code, msg
	}
	set := slog.Level(0)
	changed := false
	for _, c := range res.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return kerr.InvalidRequest.Code, fmt.Sprintf("%s operation is not allowed for the BROKER_LOGGER resource", c.Op)
		}
		if c.Name != rootLogger {
			return kerr.InvalidConfig.Code, fmt.Sprintf("Logger %s does not exist!", c.Name)
		}
		if c.Op == kmsg.IncrementalAlterConfigOpDelete {
			return kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"
		}
		value := ""
		if c.Value != nil {
			value = *c.Value
		}
		l, ok := log4jLevels[value]
		if !ok {
			return kerr.InvalidConfig.Code, fmt.Sprintf("Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN", c.Name, value)
		}
		set, changed = l, true
	}
	lv, ok := d.logLevelVar()
	if !ok {
		return kerr.InvalidRequest.Code, "The log level of this process cannot change at runtime"
	}
	if changed && !validateOnly {
		lv.Set(set)
	}
	return 0, ""
}
