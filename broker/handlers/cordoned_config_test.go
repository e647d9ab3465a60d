package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterCordonedLogDirs: a dynamic cordoned.log.dirs on the broker's
// own resource must name its log directories (or *), as Kafka 4.4
// checks; a valid one is stored.
func TestAlterCordonedLogDirs(t *testing.T) {
	e := newAdminEnv(t)
	alter := func(value string) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "cordoned.log.dirs", kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		return e.call(t, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	}
	if r := alter("/nope"); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /nope" {
		t.Fatalf("unknown dir: %+v", r)
	}
	for _, v := range []string{"*", e.d.Config.LogDirs[0]} {
		if r := alter(v); r.ErrorCode != 0 {
			t.Fatalf("%s: %+v", v, r)
		}
		if got := e.d.Controller.Image().BrokerConfigs["1"]["cordoned.log.dirs"]; got != v {
			t.Fatalf("stored %q, want %q", got, v)
		}
	}
}
