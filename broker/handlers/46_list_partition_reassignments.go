package handlers

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments, key 46, version 0 (KIP-455):
// kafka-reassign-partitions --verify/--list and
// Admin.listPartitionReassignments.
//
// topics null lists every partition being reassigned; otherwise the named
// partitions that are. Each carries its replicas (target then removing),
// adding and removing replicas. Partitions that are not being reassigned,
// and unknown topics or partitions, are left out, as in Kafka. Answered
// from this node's metadata image.
func handleListPartitionReassignments(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	img := d.Controller.Image()
	want := map[string][]int32{}
	if req.Topics == nil {
		for name, t := range img.Topics {
			for _, p := range t.Partitions {
				want[name] = append(want[name], p.Partition)
			}
		}
	} else {
		for _, t := range req.Topics {
			want[t.Topic] = append(want[t.Topic], t.Partitions...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		t := img.Topics[name]
		if t == nil {
			continue
		}
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = name
		for _, id := range want[name] {
			if id < 0 || int(id) >= len(t.Partitions) || !t.Partitions[id].Reassigning() {
				continue
			}
			p := t.Partitions[id]
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Replicas = slices.Clone(p.Replicas)
			rp.AddingReplicas = append([]int32{}, p.AddingReplicas...)
			rp.RemovingReplicas = append([]int32{}, p.RemovingReplicas...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, nil
}
