package handlers

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rootLogger is the name Kafka gives its root log4j logger; samsa has one
// logger, whose level is samsa.log.level.
const rootLogger = "root"

// describeBrokerLoggers answers DescribeConfigs of a BROKER_LOGGER
// resource. Kafka lists each of its log4j loggers (Java class names, and
// root) with its level and source DYNAMIC_BROKER_LOGGER_CONFIG; samsa has
// a single logger, listed as root with the level of samsa.log.level
// (DEBUG, INFO, WARN or ERROR, log4j's names too). It is read-only, unlike
// Kafka's: samsa cannot change its log level at runtime, and
// IncrementalAlterConfigs of BROKER_LOGGER is INVALID_REQUEST. The
// resource name is checked as Kafka does: empty is "Broker id must not be
// empty", else it must be this node's id.
func describeBrokerLoggers(d *Deps, name string) ([]configEntry, int16, string) {
	if name == "" {
		return nil, kerr.InvalidRequest.Code, "Broker id must not be empty"
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != d.Config.NodeID {
		return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d, but received %s", d.Config.NodeID, name)
	}
	level := d.Config.LogLevel
	if level == "" {
		level = "INFO"
	}
	return []configEntry{{
		name:     rootLogger,
		value:    &level,
		readOnly: true,
		source:   kmsg.ConfigSourceDynamicBrokerLoggerConfig,
		typ:      kmsg.ConfigTypeUnknown,
	}}, 0, ""
}
