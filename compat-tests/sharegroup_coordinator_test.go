package compattests

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// shareRetriable are the codes a share group request may get while the
// coordinator's partition loads or is created.
func shareRetriable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
		return true
	}
	return false
}

// shareHeartbeat sends one ShareGroupHeartbeat, retrying (with a deadline)
// while the coordinator is not ready.
func shareHeartbeat(t *testing.T, ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	for {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
		req.SubscribedTopicNames = topics
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && !shareRetriable(resp.ErrorCode) {
			return resp
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ShareGroupHeartbeat %s/%s: %v (last error %v)", group, member, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func describeShareGroup(t *testing.T, ctx context.Context, cl *kgo.Client, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	for {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && !shareRetriable(resp.Groups[0].ErrorCode) {
			return resp.Groups[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ShareGroupDescribe %s: %v (last error %v)", group, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setGroupConfig sets a group config of group (IncrementalAlterConfigs,
// resource GROUP) and fails the test unless it succeeds.
func setGroupConfig(t *testing.T, ctx context.Context, cl *kgo.Client, group, name, value string) {
	t.Helper()
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}}
	inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	if ir, err := inc.RequestWith(ctx, cl); err != nil || ir.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs GROUP: %v %+v", err, ir)
	}
}

// advertises tells whether the broker serves API key.
func advertises(t *testing.T, ctx context.Context, cl *kgo.Client, key kmsg.Key) bool {
	t.Helper()
	ok, err := harness.Advertises(ctx, cl, key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestShareGroupCoordinatorBinary drives the group coordinator's share
// group APIs on the real binary: a member joins (ShareGroupHeartbeat v1)
// and gets every partition, ShareGroupDescribe and ListGroups show the
// group, the group and a group config survive a restart, the admin APIs
// refuse changes while the group has a member, and DeleteGroups removes
// the emptied group. Kafka's kafka-share-groups.sh lists, describes,
// resets and deletes it when Java is available. The start offsets read
// back are checked only when the broker serves ShareFetch (key 78): before
// that the binary has no share Persister wired and keeps no share state.
func TestShareGroupCoordinatorBinary(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 120*time.Second)
	cl, adm := newAdmin(t, b.Addr)
	const topic, group = "sg-orders", "sg-binary"
	createTopicKadm(t, ctx, adm, topic, 2, nil)

	r := shareHeartbeat(t, ctx, cl, group, "member-one", 0, topic)
	if r.ErrorCode != 0 || r.MemberEpoch <= 0 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}
	// The partitions come with the join (samsa initializes them first) or
	// a later heartbeat (Kafka's way): poll, as a client does.
	epoch := r.MemberEpoch
	owned := 0
	for owned != 2 {
		if r.Assignment != nil {
			owned = 0
			for _, tp := range r.Assignment.TopicPartitions {
				owned += len(tp.Partitions)
			}
		}
		if owned == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the member never got both partitions: %+v", r)
		case <-time.After(200 * time.Millisecond):
		}
		r = shareHeartbeat(t, ctx, cl, group, "member-one", epoch)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %+v", r)
		}
		epoch = r.MemberEpoch
	}

	d := describeShareGroup(t, ctx, cl, group)
	if d.ErrorCode != 0 || d.GroupState != "Stable" || len(d.Members) != 1 || d.Assignor != "simple" || d.Members[0].Assignment.TopicPartitions[0].Topic != topic {
		t.Fatalf("describe: %+v", d)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	lr, err := lg.RequestWith(ctx, cl)
	if err != nil || len(lr.Groups) != 1 || lr.Groups[0].Group != group || lr.Groups[0].GroupType != "share" {
		t.Fatalf("ListGroups share: %v %+v", err, lr)
	}

	// A group config, stored by the controller.
	setGroupConfig(t, ctx, cl, group, "share.auto.offset.reset", "earliest")

	// The group (epoch, member, assignment) and the config survive a restart.
	b.Stop(t)
	b.Restart(t)
	d2 := describeShareGroup(t, ctx, cl, group)
	if d2.ErrorCode != 0 || d2.GroupEpoch != d.GroupEpoch || len(d2.Members) != 1 || d2.Members[0].MemberEpoch != d.Members[0].MemberEpoch {
		t.Fatalf("after restart: %+v, before %+v", d2, d)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName, dres.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{"share.auto.offset.reset"}
	dc.Resources = []kmsg.DescribeConfigsRequestResource{dres}
	if dr, err := dc.RequestWith(ctx, cl); err != nil || len(dr.Resources[0].Configs) != 1 || *dr.Resources[0].Configs[0].Value != "earliest" {
		t.Fatalf("group config after restart: %v %+v", err, dr)
	}

	// Changes are refused while the group has a member.
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("AlterShareGroupOffsets of a live group: %v %+v", err, ar)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{group}
	if dr, err := del.RequestWith(ctx, cl); err != nil || dr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups of a live group: %v %+v", err, dr)
	}

	// The member leaves; the empty group's offsets can be reset.
	if lv := shareHeartbeat(t, ctx, cl, group, "member-one", -1); lv.ErrorCode != 0 || lv.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", lv)
	}
	alter.Topics[0].Partitions[0].StartOffset = 0
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterShareGroupOffsets of the empty group: %v %+v", err, ar)
	}
	if advertises(t, ctx, cl, kmsg.ShareFetch) {
		dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
		if dr, err := dso.RequestWith(ctx, cl); err != nil || dr.Groups[0].Topics[0].Partitions[0].StartOffset != 0 {
			t.Fatalf("DescribeShareGroupOffsets after the reset: %v %+v", err, dr)
		}
	} else {
		t.Log("the broker does not serve ShareFetch (key 78): no share Persister is wired, start offsets are not checked")
	}

	// The five kafka-share-groups.sh JVMs can take most of two minutes on
	// a loaded machine (the whole test once failed with its single context
	// spent there: "ShareGroupDescribe sg-binary: context deadline
	// exceeded"), so the requests after them get a context of their own.
	cliRan := shareGroupsCLI(t, b.Addr, group, topic)
	ctx = testContext(t, 60*time.Second)
	if !cliRan {
		if dr, err := del.RequestWith(ctx, cl); err != nil || dr.Groups[0].ErrorCode != 0 {
			t.Fatalf("DeleteGroups of the empty group: %v %+v", err, dr)
		}
	}
	if d := describeShareGroup(t, ctx, cl, group); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %+v", d)
	}
}

// shareGroupsCLI runs Kafka 4.4's kafka-share-groups.sh against the empty
// share group: --list, --describe, --reset-offsets --to-earliest
// --execute, --delete-offsets and --delete must succeed. It reports
// whether it ran (not without Java).
func shareGroupsCLI(t *testing.T, addr, group, topic string) bool {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Log("java not found: kafka-share-groups.sh not run")
		return false
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := kafkaref.Tool(t, "kafka-share-groups", append([]string{"--bootstrap-server", addr}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kafka-share-groups %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("kafka-share-groups %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	if out := run("--list"); !strings.Contains(out, group) {
		t.Fatalf("kafka-share-groups --list does not list %s:\n%s", group, out)
	}
	if out := run("--describe", "--group", group); !strings.Contains(out, group) {
		t.Fatalf("kafka-share-groups --describe:\n%s", out)
	}
	if out := run("--reset-offsets", "--to-earliest", "--execute", "--group", group, "--topic", topic); !strings.Contains(out, topic) {
		t.Fatalf("kafka-share-groups --reset-offsets:\n%s", out)
	}
	if out := run("--delete-offsets", "--group", group, "--topic", topic); !strings.Contains(out, topic) || !strings.Contains(out, "Successful") {
		t.Fatalf("kafka-share-groups --delete-offsets:\n%s", out)
	}
	if out := run("--delete", "--group", group); !strings.Contains(out, group) {
		t.Fatalf("kafka-share-groups --delete:\n%s", out)
	}
	return true
}
