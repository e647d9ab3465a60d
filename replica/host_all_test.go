package replica

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// errTestNoNetwork answers the followers' fetches of this file's tests.
var errTestNoNetwork = errors.New("replica: test: no network")

// TestApplyManyPartitionsAtOnce: an image that makes this node leader of
// many partitions at once (host_all.go applies them with several
// goroutines) leaves each one leading in its epoch with that epoch in its
// log's leader-epoch cache, and each follower partition following; a
// later image with new epochs for some is applied to exactly those.
func TestApplyManyPartitionsAtOnce(t *testing.T) {
	const n = 3 * hostParallelMin
	logs, err := storage.OpenManager(storage.ManagerOptions{FS: vfs.NewMem(), Dirs: []string{"/d"}, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := NewManager(Options{NodeID: 1, Logs: logs, Fetch: func(context.Context, int32, *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
		return nil, errTestNoNetwork
	}, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(m.Close)
	topic := &controller.Topic{Name: "many", ID: controller.Uuid{9}}
	image := func(epochOf func(p int) int32) *controller.Image {
		img := controller.EmptyImage("c", 1)
		tp := &controller.Topic{Name: topic.Name, ID: topic.ID}
		for p := range n {
			leader := int32(1)
			if p%3 == 2 {
				leader = 2 // this node follows
			}
			tp.Partitions = append(tp.Partitions, controller.Partition{Partition: int32(p), Leader: leader, LeaderEpoch: epochOf(p),
				Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
		}
		img.Topics[tp.Name] = tp
		img.TopicsByID[tp.ID] = tp
		return img
	}
	for p := range n {
		if _, err := logs.CreateLog(storage.TopicPartition{Topic: topic.Name, Partition: int32(p)}, topic.ID, storage.LogConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(epochOf func(p int) int32) {
		t.Helper()
		for p := range n {
			part, ok := m.Partition(storage.TopicPartition{Topic: topic.Name, Partition: int32(p)})
			if !ok {
				t.Fatalf("partition %d not hosted", p)
			}
			st := part.State()
			wantRole := RoleLeader
			if p%3 == 2 {
				wantRole = RoleFollower
			}
			if st.Role != wantRole || st.LeaderEpoch != epochOf(p) {
				t.Fatalf("partition %d: role %v epoch %d, want %v epoch %d", p, st.Role, st.LeaderEpoch, wantRole, epochOf(p))
			}
			if wantRole == RoleLeader {
				if got := part.log.LatestEpoch(); got != epochOf(p) {
					t.Fatalf("partition %d: leader-epoch cache at %d, want %d", p, got, epochOf(p))
				}
			}
		}
	}
	first := func(int) int32 { return 3 }
	m.Apply(nil, image(first))
	check(first)
	// New epochs for every other partition: the rest stay as they were.
	second := func(p int) int32 { return 3 + int32(p%2)*2 }
	m.Apply(image(first), image(second))
	check(second)
}
