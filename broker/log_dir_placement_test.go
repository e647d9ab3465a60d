package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// TestDirectoryPlacement: three nodes with two log directories each (node
// 3 cordons its second). A topic's replicas are placed UNASSIGNED, each
// broker puts every log in an uncordoned directory with the fewest
// partitions and reports it, and the image then gives every replica the
// directory its log lives in on its broker, on every node. The cordoned
// directory holds nothing; nodes 1 and 2 use both of theirs. A new
// incarnation (restart) keeps every log where it was.
func TestDirectoryPlacement(t *testing.T) {
	c := newTestCluster(t, 3)
	for i := range c.dirs {
		root := c.dirs[i]
		c.dirs[i] = filepath.Join(root, "d1") + "," + filepath.Join(root, "d2")
	}
	cordoned := filepath.Join(filepath.Dir(strings.Split(c.dirs[2], ",")[0]), "d2")
	c.args[2] = append(c.args[2], "--override", "cordoned.log.dirs="+cordoned)
	c.startAll()
	c.activeController(30 * time.Second)

	adm := newClusterAdmin(t, c.addr(0), c.addr(1), c.addr(2))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var res error
	if !poll(30*time.Second, func() bool {
		r, err := adm.CreateTopic(ctx, 8, 3, nil, "jbod")
		res = err
		if err == nil {
			res = r.Err
		}
		return res == nil || strings.Contains(res.Error(), "TOPIC_ALREADY_EXISTS")
	}) {
		t.Fatalf("CreateTopic: %v", res)
	}

	// where returns, per node, the log directory of each partition of
	// jbod whose image directory agrees with its log (every one, else
	// nil).
	where := func() []map[int32]string {
		out := make([]map[int32]string, len(c.nodes))
		for i, n := range c.nodes {
			img := n.ctrl.Image()
			top := img.Topics["jbod"]
			if top == nil || len(top.Partitions) != 8 {
				return nil
			}
			out[i] = map[int32]string{}
			for j, m := range c.nodes {
				for _, p := range top.Partitions {
					path, ok := m.logs.LogDirOf(storage.TopicPartition{Topic: "jbod", Partition: p.Partition})
					if !ok || p.DirectoryOf(int32(j+1)) != m.dirFailures.ids[path] {
						return nil
					}
					if j == i {
						out[i][p.Partition] = path
					}
				}
			}
		}
		return out
	}
	var got []map[int32]string
	if !poll(30*time.Second, func() bool { got = where(); return got != nil }) {
		for i, n := range c.nodes {
			for _, p := range n.ctrl.Image().Topics["jbod"].Partitions {
				dir, _ := n.logs.LogDirOf(storage.TopicPartition{Topic: "jbod", Partition: p.Partition})
				t.Logf("node %d: p%d image dir %v, log in %q", i+1, p.Partition, p.Directories, dir)
			}
		}
		t.Fatal("the image's replica directories never agreed with the logs")
	}
	for i, m := range got {
		used := map[string]int{}
		for _, path := range m {
			used[path]++
		}
		for _, d := range strings.Split(c.dirs[i], ",") {
			switch {
			case d == cordoned && used[d] > 0:
				t.Errorf("node %d: the cordoned directory holds %d logs", i+1, used[d])
			case d != cordoned && used[d] == 0:
				t.Errorf("node %d: directory %s holds none of the 8 partitions (%v)", i+1, d, used)
			}
		}
	}
	for _, id := range c.nodes[0].ctrl.Image().CordonedLogDirs(3) {
		if id != c.nodes[2].dirFailures.ids[cordoned] {
			t.Errorf("image lists %v cordoned on node 3, want only %v", id, c.nodes[2].dirFailures.ids[cordoned])
		}
	}
	if n := len(c.nodes[0].ctrl.Image().CordonedLogDirs(3)); n != 1 {
		t.Errorf("image lists %d cordoned directories on node 3", n)
	}

	// Restart node 1: its logs stay where they were and the image agrees.
	c.stop(0)
	n, err := c.startNode(0)
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[0] = n
	var after []map[int32]string
	if !poll(30*time.Second, func() bool { after = where(); return after != nil }) {
		t.Fatal("after a restart the image's replica directories never agreed with the logs")
	}
	if fmt.Sprint(after[0]) != fmt.Sprint(got[0]) {
		t.Fatalf("node 1's logs moved across a restart: %v, then %v", got[0], after[0])
	}
	if slices.Contains(c.nodes[1].ctrl.Image().Brokers[1].LogDirs, controller.DirUnassigned) || len(c.nodes[1].ctrl.Image().Brokers[1].LogDirs) != 2 {
		t.Fatalf("node 1 registered %v", c.nodes[1].ctrl.Image().Brokers[1].LogDirs)
	}
}
