package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// listed renders a ListConfigResources answer as "type:name" items.
func listed(resp *kmsg.ListConfigResourcesResponse) []string {
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, fmt.Sprintf("%d:%s", r.Type, r.Name))
	}
	return out
}

func TestListConfigResources(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "zeta", 1, nil)
	e.createTopic(t, "alpha", 1, nil)
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 2, Host: "h2", Port: 9093, Listeners: []controller.BrokerListener{{Name: "PLAINTEXT", Host: "h2", Port: 9093}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Controller.RegisterBroker(controller.Broker{ID: 3, Host: "h3", Port: 9094}); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Controller.FenceBroker(3, true); err != nil {
		t.Fatal(err)
	}
	v := "60000"
	for _, g := range []string{"g-b", "g-a"} {
		if code, msg := e.d.Controller.AlterGroupConfigs(g, []controller.ConfigOp{{Name: "consumer.session.timeout.ms", Value: &v, Op: controller.OpSet}}, false, nil); code != 0 {
			t.Fatalf("AlterGroupConfigs %s: %d %s", g, code, msg)
		}
	}
	// A group whose only config was deleted has none left: not listed.
	if code, msg := e.d.Controller.AlterGroupConfigs("g-gone", []controller.ConfigOp{{Name: "consumer.session.timeout.ms", Value: &v, Op: controller.OpSet}}, false, nil); code != 0 {
		t.Fatalf("AlterGroupConfigs: %d %s", code, msg)
	}
	if code, msg := e.d.Controller.AlterGroupConfigs("g-gone", []controller.ConfigOp{{Name: "consumer.session.timeout.ms", Op: controller.OpDelete}}, false, nil); code != 0 {
		t.Fatalf("AlterGroupConfigs delete: %d %s", code, msg)
	}

	ms := "1000"
	for _, sub := range []string{"cm-b", "cm-a"} {
		if code, msg := e.d.Controller.AlterClientMetrics(sub, []controller.ConfigOp{{Name: "interval.ms", Value: &ms, Op: controller.OpSet}}, false, nil); code != 0 {
			t.Fatalf("AlterClientMetrics %s: %d %s", sub, code, msg)
		}
	}

	all := e.call(t, kmsg.NewPtrListConfigResourcesRequest(), 1).(*kmsg.ListConfigResourcesResponse)
	// Kafka's order of types: groups, client metrics, broker loggers,
	// brokers, topics; the fenced broker 3 is left out.
	want := []string{"32:g-a", "32:g-b", "16:cm-a", "16:cm-b", "8:1", "8:2", "4:1", "4:2", "2:alpha", "2:zeta"}
	if got := listed(all); all.ErrorCode != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("v1, every type: code %d, %v, want %v", all.ErrorCode, got, want)
	}

	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeTopic), int8(kmsg.ConfigResourceTypeBroker), int8(kmsg.ConfigResourceTypeTopic)}
	resp := e.call(t, req, 1).(*kmsg.ListConfigResourcesResponse)
	if got, want := listed(resp), []string{"4:1", "4:2", "2:alpha", "2:zeta"}; resp.ErrorCode != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("v1, topics and brokers: code %d, %v, want %v", resp.ErrorCode, got, want)
	}

	// v0 (ListClientMetricsResources) knows client metrics only.
	resp = e.call(t, kmsg.NewPtrListConfigResourcesRequest(), 0).(*kmsg.ListConfigResourcesResponse)
	if got := listed(resp); resp.ErrorCode != 0 || fmt.Sprint(got) != "[16:cm-a 16:cm-b]" {
		t.Errorf("v0: code %d, %v", resp.ErrorCode, got)
	}

	// A type the version does not know: UNSUPPORTED_VERSION, nothing listed.
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeUnknown, 99} {
		req = kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeTopic), int8(typ)}
		resp = e.call(t, req, 1).(*kmsg.ListConfigResourcesResponse)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ConfigResources) != 0 {
			t.Errorf("v1, type %d: code %d, %v", typ, resp.ErrorCode, listed(resp))
		}
	}

	// On a listener broker 2 does not have, broker 2 is left out (broker 1
	// of this test registered no listeners: it counts as having them all).
	e.d.Authz = nil
	resp = e.callOn(t, "NOSUCH", kmsg.NewPtrListConfigResourcesRequest(), 1).(*kmsg.ListConfigResourcesResponse)
	for _, item := range listed(resp) {
		if item == "4:2" || item == "8:2" {
			t.Errorf("broker 2 listed on a listener it does not have: %v", listed(resp))
		}
	}

	// DESCRIBE_CONFIGS on the cluster is needed.
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:admin"}}}
	resp = e.callAs(t, "User:bob", kmsg.NewPtrListConfigResourcesRequest(), 1).(*kmsg.ListConfigResourcesResponse)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.ConfigResources) != 0 {
		t.Errorf("unauthorized: code %d, %v", resp.ErrorCode, listed(resp))
	}
	resp = e.callAs(t, "User:admin", kmsg.NewPtrListConfigResourcesRequest(), 1).(*kmsg.ListConfigResourcesResponse)
	if resp.ErrorCode != 0 || fmt.Sprint(listed(resp)) != fmt.Sprint(want) {
		t.Errorf("super user: code %d, %v", resp.ErrorCode, listed(resp))
	}
}
