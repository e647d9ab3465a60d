package compattests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// TestJBODDirectoryPlacement (KIP-858, KIP-1066): three samsa processes
// with two log directories each; node 3 cordons its second one
// (cordoned.log.dirs). A topic of twelve partitions with RF=3 puts a
// replica of every partition on every node: DescribeLogDirs shows nodes
// 1 and 2 using both of their directories (the controller leaves the
// directory to a broker with several, which picks the emptier one) and
// node 3 none of its cordoned directory. Then node 3's every directory is
// cordoned at runtime (dynamic cordoned.log.dirs=*): a new topic of RF=3
// cannot be placed (Kafka's INVALID_REPLICATION_FACTOR), one of RF=2 goes
// to nodes 1 and 2 only; deleting the dynamic value uncordons node 3.
func TestJBODDirectoryPlacement(t *testing.T) {
	t.Parallel()
	extra := map[int]string{}
	for id := 1; id <= 3; id++ {
		extra[id] = t.TempDir()
	}
	c := harness.StartCluster(t, 3, harness.ClusterOptions{
		ExtraLogDirs: func(id int) []string { return []string{extra[id]} },
		NodeEnv: func(id int) []string {
			if id == 3 {
				return []string{"KAFKA_CORDONED_LOG_DIRS=" + extra[3]}
			}
			return nil
		},
	})
	ctx := testContext(t, 2*time.Minute)
	const topic, partitions = "placed", 12
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	jbodWait(ctx, t, 30*time.Second, "topic created", func() (bool, string) {
		r, err := adm.CreateTopic(ctx, partitions, 3, nil, topic)
		if err == nil {
			err = r.Err
		}
		return err == nil || strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS"), fmt.Sprint(err)
	})

	// Per node: how many of the topic's partitions each directory holds.
	counts := make([]map[string]int, 3)
	for i := range counts {
		id := int32(i + 1)
		jbodWait(ctx, t, 30*time.Second, fmt.Sprintf("node %d hosting every partition", id), func() (bool, string) {
			dirs, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
			if err != nil {
				return false, fmt.Sprintf("DescribeLogDirs: %v", err)
			}
			counts[i] = map[string]int{}
			total := 0
			for dir, d := range dirs {
				if d.Err != nil {
					return false, fmt.Sprintf("%s: %v", dir, d.Err)
				}
				counts[i][dir] = len(d.Topics[topic])
				total += len(d.Topics[topic])
			}
			return total == partitions, fmt.Sprint(counts[i])
		})
	}
	for i, byDir := range counts {
		id := i + 1
		for dir, n := range byDir {
			switch {
			case id == 3 && jbodSameDir(dir, extra[3]) && n > 0:
				t.Errorf("node 3 put %d partitions in its cordoned directory %s", n, dir)
			case id != 3 && n == 0:
				t.Errorf("node %d put no partition in its directory %s: %v", id, dir, byDir)
			}
		}
		if len(byDir) != 2 {
			t.Errorf("node %d lists directories %v, want 2", id, byDir)
		}
	}
	t.Logf("partitions per directory: %v", counts)

	// Every directory of node 3 cordoned, at runtime (a dynamic
	// per-broker config, as kafka-configs --entity-type brokers
	// --entity-name 3 --alter --add-config cordoned.log.dirs=* does).
	alterCordoned := func(value *string) {
		t.Helper()
		op := kadm.SetConfig
		if value == nil {
			op = kadm.DeleteConfig
		}
		rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "cordoned.log.dirs", Value: value}}, 3)
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatalf("AlterBrokerConfigs cordoned.log.dirs=%v: %v", value, err)
		}
	}
	alterCordoned(kmsg.StringPtr("*"))
	// The controller learns it from node 3's next heartbeat: ask with
	// validate_only until then.
	jbodWait(ctx, t, 30*time.Second, "RF=3 refused with node 3 cordoned", func() (bool, string) {
		r, err := adm.ValidateCreateTopics(ctx, 1, 3, nil, "placed-rf3")
		if err == nil {
			err = r.Error()
		}
		return err != nil && strings.Contains(err.Error(), "INVALID_REPLICATION_FACTOR"), fmt.Sprint(err)
	})
	jbodWait(ctx, t, 30*time.Second, "RF=2 placed on nodes 1 and 2", func() (bool, string) {
		r, err := adm.CreateTopic(ctx, 4, 2, nil, "placed-rf2")
		if err == nil {
			err = r.Err
		}
		if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
			return false, fmt.Sprint(err)
		}
		m, err := adm.Metadata(ctx, "placed-rf2")
		if err != nil {
			return false, fmt.Sprint(err)
		}
		for _, p := range m.Topics["placed-rf2"].Partitions {
			for _, r := range p.Replicas {
				if r == 3 {
					return false, fmt.Sprintf("partition %d on %v", p.Partition, p.Replicas)
				}
			}
		}
		return len(m.Topics["placed-rf2"].Partitions) == 4, ""
	})

	// Deleting the dynamic value restores the static one (one directory
	// cordoned): RF=3 is placed again.
	alterCordoned(nil)
	jbodWait(ctx, t, 30*time.Second, "RF=3 placed once node 3 is uncordoned", func() (bool, string) {
		r, err := adm.ValidateCreateTopics(ctx, 1, 3, nil, "placed-rf3")
		if err == nil {
			err = r.Error()
		}
		return err == nil, fmt.Sprint(err)
	})
}
