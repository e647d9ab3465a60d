package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller/acl"
	"github.com/samsa-broker/samsa/storage"
)

// fakeMover records the moves asked and answers with code.
type fakeMover struct {
	asked []string
	code  int16
}

func (f *fakeMover) AlterReplicaLogDir(tp storage.TopicPartition, dir string) int16 {
	f.asked = append(f.asked, tp.String()+"@"+dir)
	return f.code
}

// TestAlterReplicaLogDirs: without ALTER on the cluster every partition
// named is CLUSTER_AUTHORIZATION_FAILED, per directory and topic as named
// (Kafka's getErrorResponse); with it, a partition named twice is asked
// once, for the last directory, and answered once, as Kafka's map does.
func TestAlterReplicaLogDirs(t *testing.T) {
	e := newAdminEnv(t)
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{}}
	mover := &fakeMover{code: kerr.ReplicaNotAvailable.Code}
	e.d.LogDirMoves = mover
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	for _, dir := range []string{"/a", "/b"} {
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = dir
		d.Topics = []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		req.Dirs = append(req.Dirs, d)
	}
	next := func(d *Deps, r *Request) (kmsg.Response, error) { return handleAlterReplicaLogDirs(d, r) }
	resp, _ := authzCheck(req.Key())(e.d, &Request{Body: req, Principal: "User:bob"}, next)
	r := resp.(*kmsg.AlterReplicaLogDirsResponse)
	if len(r.Topics) != 2 || len(mover.asked) != 0 {
		t.Fatalf("unauthorized: %+v, asked %v", r.Topics, mover.asked)
	}
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
				t.Errorf("unauthorized partition %d: %d", p.Partition, p.ErrorCode)
			}
		}
	}
	e.d.Authz.SuperUsers = []string{"User:admin"}
	resp, _ = authzCheck(req.Key())(e.d, &Request{Body: req, Principal: "User:admin"}, next)
	r = resp.(*kmsg.AlterReplicaLogDirsResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 || r.Topics[0].Partitions[1].ErrorCode != kerr.ReplicaNotAvailable.Code {
		t.Fatalf("authorized: %+v", r.Topics)
	}
	if len(mover.asked) != 2 || mover.asked[0] != "t-0@/b" || mover.asked[1] != "t-1@/b" {
		t.Fatalf("asked %v, want t-0 and t-1 to /b", mover.asked)
	}
}
