package handlers

import (
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
