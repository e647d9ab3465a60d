package handlers

import (
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// TestElectLeaders: on one broker every partition is led by its preferred
// replica. Named partitions answer ELECTION_NOT_NEEDED (PREFERRED, and
// UNCLEAN from v1), unknown ones UNKNOWN_TOPIC_OR_PARTITION with Kafka's
// messages, an unknown election type INVALID_REQUEST; null partitions
// (every partition) leave out those needing no election, as Kafka does.
func TestElectLeaders(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "a", 2, nil)
	named := func(typ int8, parts map[string][]int32) *kmsg.ElectLeadersRequest {
		req := kmsg.NewPtrElectLeadersRequest()
		req.ElectionType = typ
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for name, ps := range parts {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = name, ps
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	type result struct {
		topic     string
		partition int32
		code      int16
		msg       string
	}
	flatten := func(resp *kmsg.ElectLeadersResponse) []result {
		var out []result
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out = append(out, result{rt.Topic, rp.Partition, rp.ErrorCode, deref(rp.ErrorMessage)})
			}
		}
		return out
	}
	for _, v := range []int16{0, 1, 2} {
		resp := e.call(t, named(0, map[string][]int32{"a": {1, 7}}), v).(*kmsg.ElectLeadersResponse)
		got := flatten(resp)
		if len(got) != 2 || got[0].code != kerr.ElectionNotNeeded.Code ||
			got[1] != (result{"a", 7, kerr.UnknownTopicOrPartition.Code, "No such partition as a-7"}) {
			t.Fatalf("v%d PREFERRED: %+v", v, got)
		}
		resp = e.call(t, named(0, map[string][]int32{"nope": {0}}), v).(*kmsg.ElectLeadersResponse)
		if got := flatten(resp); len(got) != 1 || got[0] != (result{"nope", 0, kerr.UnknownTopicOrPartition.Code, "No such topic as nope"}) {
			t.Fatalf("v%d unknown topic: %+v", v, got)
		}
		all := kmsg.NewPtrElectLeadersRequest() // Topics nil: every partition
		if got := flatten(e.call(t, all, v).(*kmsg.ElectLeadersResponse)); len(got) != 0 {
			t.Fatalf("v%d all partitions, none to elect: %+v", v, got)
		}
		if v == 0 {
			continue
		}
		resp = e.call(t, named(1, map[string][]int32{"a": {0}}), v).(*kmsg.ElectLeadersResponse)
		if got := flatten(resp); len(got) != 1 || got[0].code != kerr.ElectionNotNeeded.Code {
			t.Fatalf("v%d UNCLEAN with a leader: %+v", v, got)
		}
		resp = e.call(t, named(5, map[string][]int32{"a": {0}}), v).(*kmsg.ElectLeadersResponse)
		if got := flatten(resp); len(got) != 1 || got[0].code != kerr.InvalidRequest.Code {
			t.Fatalf("v%d unknown election type: %+v", v, got)
		}
	}
}

// notLeadingQuorum stands for a quorum in which this node is not (or no
// longer) the active controller: a node that knows no leader answers
// forwarded-kind requests itself (broker.Node.forward).
type notLeadingQuorum struct{}

func (notLeadingQuorum) Propose(int64, []controller.Record) error { return controller.ErrNotController }
func (notLeadingQuorum) Leading() bool                            { return false }
func (notLeadingQuorum) LeaderID() int32                          { return -1 }

// TestElectLeadersNotController: a node that is not the active controller
// answers an ElectLeaders as Kafka's whole-request error response
// (ElectLeadersRequest.getErrorResponse): NOT_CONTROLLER at the top level
// (v1+) and on every partition named; for all partitions (null topics) no
// partition is listed. Before, only the partitions carried it (and a
// request for all partitions listed every partition of the cluster).
func TestElectLeadersNotController(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic(t, "a", 2, nil)
	m := controller.NewMachine("admin-test-cluster", 1)
	m.Restore(e.d.Controller.Image())
	c, err := controller.New(controller.Options{NodeID: 1, ClusterID: "admin-test-cluster", Quorum: notLeadingQuorum{}, Machine: m,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.d.Controller = c
	named := kmsg.NewPtrElectLeadersRequest()
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "a", []int32{0, 1}
	named.Topics = append(named.Topics, rt)
	for v := int16(0); v <= 2; v++ {
		resp := e.call(t, named, v).(*kmsg.ElectLeadersResponse)
		if v >= 1 && resp.ErrorCode != kerr.NotController.Code {
			t.Fatalf("v%d top level: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.NotController.Code {
				t.Fatalf("v%d partition %d: %v", v, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	all := kmsg.NewPtrElectLeadersRequest()
	all.Topics = nil
	resp := e.call(t, all, 2).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.NotController.Code || len(resp.Topics) != 0 {
		t.Fatalf("all partitions: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
}
