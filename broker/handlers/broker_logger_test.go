package handlers

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeBrokerLoggers(t *testing.T) {
	e := newAdminEnv(t, "samsa.log.level=WARN")
	resp := e.call(t, describeConfigsReq(true, false,
		describeResource(kmsg.ConfigResourceTypeBrokerLogger, "1"),
		describeResource(kmsg.ConfigResourceTypeBrokerLogger, ""),
		describeResource(kmsg.ConfigResourceTypeBrokerLogger, "x"),
		describeResource(kmsg.ConfigResourceTypeBrokerLogger, "7"),
	), 4).(*kmsg.DescribeConfigsResponse)
	r := resp.Resources[0]
	if r.ErrorCode != 0 || len(r.Configs) != 1 {
		t.Fatalf("own id: %+v", r)
	}
	c := r.Configs[0]
	if c.Name != "root" || deref(c.Value) != "WARN" || c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || !c.ReadOnly || c.IsSensitive {
		t.Errorf("root: %+v", c)
	}
	for i, want := range []string{"Broker id must not be empty", "Broker id must be an integer, but it is: x", ""} {
		r := resp.Resources[i+1]
		if r.ErrorCode != 42 || (want != "" && deref(r.ErrorMessage) != want) {
			t.Errorf("resource %q: %d %q", r.ResourceName, r.ErrorCode, deref(r.ErrorMessage))
		}
	}
}

// levelHandler stands for cmd/samsa's handler, whose level can change.
type levelHandler struct {
	slog.Handler
	level *slog.LevelVar
}

func (h levelHandler) LevelVar() *slog.LevelVar { return h.level }

// TestAlterBrokerLoggers pins Kafka 4.4's answers to IncrementalAlterConfigs
// of its root BROKER_LOGGER, and that the level of the process changes
// (validate_only leaves it).
func TestAlterBrokerLoggers(t *testing.T) {
	e := newAdminEnv(t)
	lv := new(slog.LevelVar)
	var buf bytes.Buffer
	e.d.Logger = slog.New(levelHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: lv}), lv})
	alter := func(name string, validate bool, op kmsg.IncrementalAlterConfigOp, logger string, value *string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validate
		req.Resources = append(req.Resources, incResource(kmsg.ConfigResourceTypeBrokerLogger, name, incOp{logger, op, value}))
		r := e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return r.ErrorCode, deref(r.ErrorMessage)
	}
	set := kmsg.IncrementalAlterConfigOpSet
	for _, tc := range []struct {
		name     string
		validate bool
		op       kmsg.IncrementalAlterConfigOp
		logger   string
		value    *string
		code     int16
		msg      string
		level    slog.Level
	}{
		{"1", true, set, "root", strp("DEBUG"), 0, "", slog.LevelInfo},
		{"1", false, set, "root", strp("debug"), 40, "Cannot set the log level of root to debug as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN", slog.LevelInfo},
		{"1", false, kmsg.IncrementalAlterConfigOpDelete, "root", nil, 42, "Removing the log level of the root logger is not allowed", slog.LevelInfo},
		{"1", false, kmsg.IncrementalAlterConfigOpAppend, "root", strp("DEBUG"), 42, "APPEND operation is not allowed for the BROKER_LOGGER resource", slog.LevelInfo},
		{"", false, set, "root", strp("DEBUG"), 42, "Node id must be an integer, but it is: ", slog.LevelInfo},
		{"1", false, set, "root", strp("WARN"), 0, "", slog.LevelWarn},
		{"1", false, set, "root", strp("TRACE"), 0, "", slog.LevelDebug - 4},
	} {
		code, msg := alter(tc.name, tc.validate, tc.op, tc.logger, tc.value)
		if code != tc.code || (tc.code != 0 && msg != tc.msg) || lv.Level() != tc.level {
			t.Errorf("%q %v %s=%s: %d %q level %v, want %d %q %v", tc.name, tc.op, tc.logger, deref(tc.value), code, msg, lv.Level(), tc.code, tc.msg, tc.level)
		}
	}
	resp := e.call(t, describeConfigsReq(true, false, describeResource(kmsg.ConfigResourceTypeBrokerLogger, "1")), 4).(*kmsg.DescribeConfigsResponse)
	if c := resp.Resources[0].Configs; len(c) != 1 || deref(c[0].Value) != "TRACE" || c[0].ReadOnly {
		t.Errorf("described: %+v", c)
	}
	e.d.Logger.Debug("now shown")
	if !strings.Contains(buf.String(), "now shown") {
		t.Errorf("DEBUG line not written at TRACE: %q", buf.String())
	}
}
