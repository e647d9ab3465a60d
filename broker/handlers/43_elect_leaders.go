package handlers

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// ElectLeaders, key 43, versions 0-2 (KIP-183, KIP-460): kafka-leader-election
// and Admin.electLeaders.
//
//   - v0: topic_partitions (null: every partition of the cluster) and
//     timeout_ms; the election is PREFERRED: leadership moves to the first
//     replica when it is unfenced and in the ISR, else
//     PREFERRED_LEADER_NOT_AVAILABLE; ELECTION_NOT_NEEDED when it leads
//     already.
//   - v1: election_type (0 PREFERRED, 1 UNCLEAN) and a top-level
//     error_code. UNCLEAN only acts on leaderless partitions: an unfenced
//     ISR member if there is one, else any unfenced replica becomes leader
//     (its log becomes the truth, the ISR is reset to it);
//     ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is unfenced,
//     ELECTION_NOT_NEEDED when the partition has a leader. Another type is
//     INVALID_REQUEST.
//   - v2: flexible.
//
// Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION with
// Kafka's messages ("No such topic as t", "No such partition as t-9"). With
// null topic_partitions, as Kafka's controller, the partitions that need
// no election are left out of the results. The request changes metadata,
// so it is forwarded to the active controller (Entry.Forward); timeout_ms
// is ignored: the controller commits before answering.
func handleElectLeaders(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := controller.ElectPreferred
	if r.Header.APIVersion >= 1 {
		typ = controller.ElectionType(req.ElectionType)
	}
	all := req.Topics == nil
	var parts []controller.TopicPartition
	if all {
		img := d.Controller.Image()
		for _, name := range slices.Sorted(maps.Keys(img.Topics)) {
			for _, p := range img.Topics[name].Partitions {
				parts = append(parts, controller.TopicPartition{Topic: name, Partition: p.Partition})
			}
		}
	} else {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, controller.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	var results []controller.ElectLeaderResult
	if len(parts) > 0 {
		results = d.Controller.ElectLeaders(typ, parts)
	}
	byTopic := map[string]int{}
	for _, res := range results {
		if all && res.ErrorCode == kerr.ElectionNotNeeded.Code {
			continue
		}
		i, ok := byTopic[res.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[res.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = res.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = res.Partition
		rp.ErrorCode = res.ErrorCode
		rp.ErrorMessage = adminErrorMessage(res.ErrorCode, res.ErrorMessage)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, res := range results {
		if res.ErrorCode == kerr.NotController.Code {
			notControllerElection(resp, all, adminErrorMessage(res.ErrorCode, res.ErrorMessage))
			break
		}
	}
	return resp, nil
}

// notControllerElection makes resp the answer of a controller that lost
// its role under the request, as Kafka's controller fails such a write as
// a whole (ElectLeadersRequest.getErrorResponse): NOT_CONTROLLER at the top
// level (v1+) and on every partition named, none listed for a request of
// all partitions. franz-go retries on it (it reads the first partition's
// code), then reaching the new controller.
func notControllerElection(resp *kmsg.ElectLeadersResponse, all bool, msg *string) {
	resp.ErrorCode = kerr.NotController.Code
	if all {
		resp.Topics = nil
		return
	}
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			rp.ErrorCode, rp.ErrorMessage = kerr.NotController.Code, msg
		}
	}
}
