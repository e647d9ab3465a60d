package handlers

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
)

func TestDescribeLogDirs(t *testing.T) {
	e := newAdminEnv(t)
	id := e.createTopic(t, "a", 2, nil)
	for p := int32(0); p < 2; p++ {
		if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "a", Partition: p}, id, storage.DefaultLogConfig()); err != nil {
			t.Fatal(err)
		}
	}
	bID := e.createTopic(t, "b", 1, nil)
	if _, err := e.d.Logs.CreateLog(storage.TopicPartition{Topic: "b", Partition: 0}, bID, storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(e.dir)
	if err != nil {
		t.Fatal(err)
	}

	askA1 := kmsg.NewDescribeLogDirsRequestTopic()
	askA1.Topic, askA1.Partitions = "a", []int32{1, 5}
	for _, tc := range []struct {
		name   string
		topics []kmsg.DescribeLogDirsRequestTopic
		want   map[string][]int32
	}{
		{"all", nil, map[string][]int32{"a": {0, 1}, "b": {0}}},
		{"none", []kmsg.DescribeLogDirsRequestTopic{}, map[string][]int32{}},
		{"some", []kmsg.DescribeLogDirsRequestTopic{askA1}, map[string][]int32{"a": {1}}},
	} {
		for _, v := range []int16{0, 1, 2, 3, 4, 5} {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.Topics = tc.topics
			resp := e.call(t, req, v).(*kmsg.DescribeLogDirsResponse)
			if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
				t.Fatalf("%s v%d: %+v", tc.name, v, resp)
			}
			rd := resp.Dirs[0]
			if rd.Dir != dir || rd.ErrorCode != 0 {
				t.Errorf("%s v%d: dir %q code %d, want %q", tc.name, v, rd.Dir, rd.ErrorCode, dir)
			}
			if v >= 4 && (rd.TotalBytes <= 0 || rd.UsableBytes < 0 || rd.UsableBytes > rd.TotalBytes) {
				t.Errorf("%s v%d: total %d usable %d", tc.name, v, rd.TotalBytes, rd.UsableBytes)
			}
			if v < 4 && rd.TotalBytes != -1 {
				t.Errorf("%s v%d: total bytes %d on the wire before v4", tc.name, v, rd.TotalBytes)
			}
			got := map[string][]int32{}
			for _, rt := range rd.Topics {
				for _, p := range rt.Partitions {
					got[rt.Topic] = append(got[rt.Topic], p.Partition)
					if p.Size < 0 || p.OffsetLag != 0 || p.IsFuture {
						t.Errorf("%s v%d: %s-%d %+v", tc.name, v, rt.Topic, p.Partition, p)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%s v%d: got %v, want %v", tc.name, v, got, tc.want)
			}
			for topic, parts := range tc.want {
				if len(got[topic]) != len(parts) {
					t.Errorf("%s v%d: got %v, want %v", tc.name, v, got, tc.want)
					continue
				}
				for i := range parts {
					if got[topic][i] != parts[i] {
						t.Errorf("%s v%d: got %v, want %v", tc.name, v, got, tc.want)
					}
				}
			}
		}
	}
}

func TestDescribeLogDirsMissingDir(t *testing.T) {
	e := newAdminEnv(t)
	missing := filepath.Join(e.dir, "gone")
	e.d.Config.LogDirs = append(e.d.Config.LogDirs, missing)
	resp := e.call(t, kmsg.NewPtrDescribeLogDirsRequest(), 4).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 2 || resp.Dirs[0].ErrorCode != 0 || resp.Dirs[1].ErrorCode != kerr.KafkaStorageError.Code || resp.Dirs[1].Dir != missing {
		t.Fatalf("%+v", resp.Dirs)
	}
}

// TestDescribeLogDirsCordoned: v5 adds is_cordoned (KIP-1066), true for a
// directory in cordoned.log.dirs (here as a dynamic change sets it). Without
// v5 kafka-python took samsa for a Kafka 4.2 broker (it infers 4.3+ from
// DescribeLogDirs v5; its test_kafka_version_infer failed).
func TestDescribeLogDirsCordoned(t *testing.T) {
	e := newAdminEnv(t)
	dirCordoned := func(v int16) bool {
		resp := e.call(t, kmsg.NewPtrDescribeLogDirsRequest(), v).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Dirs)
		}
		return resp.Dirs[0].IsCordoned
	}
	if dirCordoned(5) {
		t.Fatal("v5: a directory not in cordoned.log.dirs is cordoned")
	}
	e.d.Logs.SetCordonedDirs(e.d.Config.LogDirs)
	if !dirCordoned(5) {
		t.Fatal("v5: the cordoned directory is not reported cordoned")
	}
	if dirCordoned(4) {
		t.Fatal("v4 has no is_cordoned on the wire, yet it decoded true")
	}
	e.d.Logs.SetCordonedDirs(nil)
	if dirCordoned(5) {
		t.Fatal("v5: still cordoned after the set was emptied")
	}
}
