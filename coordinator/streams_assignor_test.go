package coordinator

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"
)

// kafkaAssignorCase is one line of testdata/streams_assignor/kafka44.jsonl: a
// group as StreamsAssignorGolden.java gave it to Kafka 4.4's StickyTaskAssignor,
// and Kafka's answer.
type kafkaAssignorCase struct {
	Standbys      int `json:"standbys"`
	Subtopologies []struct {
		ID         string `json:"id"`
		Partitions int32  `json:"partitions"`
		Stateful   bool   `json:"stateful"`
	} `json:"subtopologies"`
	Members []struct {
		ID      string                      `json:"id"`
		Process string                      `json:"process"`
		Active  map[string][]int32          `json:"active"`
		Standby map[string][]int32          `json:"standby"`
		Offsets map[string]map[string]int64 `json:"offsets"`
	} `json:"members"`
	Kafka map[string]struct {
		Active  map[string][]int32 `json:"active"`
		Standby map[string][]int32 `json:"standby"`
	} `json:"kafka"`
}

func taskSetOf(m map[string][]int32) taskSet {
	out := taskSet{}
	for s, ps := range m {
		for _, p := range ps {
			out.add(s, p)
		}
	}
	return out
}

// TestStreamsAssignorMatchesKafka replays Kafka 4.4's own task assignor
// (StickyTaskAssignor, run by testdata/streams_assignor/StreamsAssignorGolden.java
// on 300 seeded random groups: 1-7 members on 1-7 processes, 1-3 subtopologies
// of 1-8 partitions, stateful or not, 0-2 standby replicas, no current
// assignment, a random one, or Kafka's own for the group with a member more or
// less, and reported task offsets) and wants samsa's assignStreamsTasks to give
// every member exactly the active and standby tasks Kafka gave it.
func TestStreamsAssignorMatchesKafka(t *testing.T) {
	f, err := os.Open("testdata/streams_assignor/kafka44.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var c kafkaAssignorCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		tasks, stateful := map[string]int32{}, map[string]bool{}
		for _, s := range c.Subtopologies {
			tasks[s.ID] = s.Partitions
			stateful[s.ID] = s.Stateful
		}
		var members []streamsAssignMember
		for _, m := range c.Members {
			am := streamsAssignMember{id: m.ID, process: m.Process, prev: newStreamsTasks()}
			am.prev.active, am.prev.standby = taskSetOf(m.Active), taskSetOf(m.Standby)
			for s, ps := range m.Offsets {
				for p, off := range ps {
					pi, err := strconv.Atoi(p)
					if err != nil {
						t.Fatal(err)
					}
					if am.offsets == nil {
						am.offsets = map[string]map[int32]int64{}
					}
					if am.offsets[s] == nil {
						am.offsets[s] = map[int32]int64{}
					}
					am.offsets[s][int32(pi)] = off
				}
			}
			members = append(members, am)
		}
		got := assignStreamsTasks(members, tasks, stateful, c.Standbys)
		for _, m := range c.Members {
			want := c.Kafka[m.ID]
			if !got[m.ID].active.equal(taskSetOf(want.Active)) || !got[m.ID].standby.equal(taskSetOf(want.Standby)) {
				t.Errorf("line %d member %s: samsa active %v standby %v, Kafka active %v standby %v", n, m.ID,
					got[m.ID].active, got[m.ID].standby, want.Active, want.Standby)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 300 {
		t.Fatalf("%d cases, want 300", n)
	}
}

// TestStreamsAssignorRanksByTaskOffsets: with no current assignment, the
// member that reported the highest offset sum for a task (it has the task's
// state on disk) gets it active, the next one its standby (Kafka 4.4's
// rankStandbyCandidates and findPrevMemberWithLeastLoad); samsa gave the task
// to the first member by id before session 33, whatever the offsets.
func TestStreamsAssignorRanksByTaskOffsets(t *testing.T) {
	members := []streamsAssignMember{
		{id: "a", process: "pa", prev: newStreamsTasks()},
		{id: "b", process: "pb", prev: newStreamsTasks(), offsets: map[string]map[int32]int64{"0": {0: 100}}},
		{id: "c", process: "pc", prev: newStreamsTasks(), offsets: map[string]map[int32]int64{"0": {0: 500}}},
	}
	out := assignStreamsTasks(members, map[string]int32{"0": 1}, map[string]bool{"0": true}, 1)
	if !out["c"].active.has("0", 0) || !out["b"].standby.has("0", 0) || out["a"].active.count()+out["a"].standby.count() != 0 {
		t.Fatalf("a %v, b %v, c %v; want c active and b standby", out["a"], out["b"], out["c"])
	}
}

// TestJavaHashMapOrder checks the key orders against what Java 17's
// java.util.HashMap printed for the same keys (a group of the golden file):
// put appends to a bucket, computeIfAbsent puts a new key at its head.
func TestJavaHashMapOrder(t *testing.T) {
	ids := []string{"YVEWxL5OuHO7tKmc57kTxT", "fbFbx7aGsjZ-cEHfvbCXKZ", "l3mN4YHtpWCiSy3sfyHOec", "m2", "m3", "m6", "oQhXvx_PfOX6nxb408minC"}
	procOf := map[string]string{"YVEWxL5OuHO7tKmc57kTxT": "sNOtrSan-qTI2", "fbFbx7aGsjZ-cEHfvbCXKZ": "Vq7CUUjj--SY2",
		"l3mN4YHtpWCiSy3sfyHOec": "ClRtLEGF-asuL", "m2": "CeZ0p5fV-KrnU", "m3": "F_dOmgOR-X1Sf", "m6": "Axrfj5KN-n3iV", "oQhXvx_PfOX6nxb408minC": "Axrfj5KN-n3iV"}
	members := javaHashMapOrder(ids, 0) // new HashMap<>(), put in id order
	if want := []string{"fbFbx7aGsjZ-cEHfvbCXKZ", "m2", "m3", "oQhXvx_PfOX6nxb408minC", "l3mN4YHtpWCiSy3sfyHOec", "m6", "YVEWxL5OuHO7tKmc57kTxT"}; !slices.Equal(members, want) {
		t.Fatalf("members %v, Java %v", members, want)
	}
	procs := newJavaHashMap(len(ids)) // new HashMap<>(7), computeIfAbsent in members' order
	for _, id := range members {
		procs.computeIfAbsent(procOf[id])
	}
	// "m2" and "m3"'s processes share bucket 0 and "fbFb..." and "YVEW..."'s bucket 1 of
	// the 8: the later one comes first.
	if got, want := procs.keys(), []string{"F_dOmgOR-X1Sf", "CeZ0p5fV-KrnU", "sNOtrSan-qTI2", "Vq7CUUjj--SY2", "Axrfj5KN-n3iV", "ClRtLEGF-asuL"}; !slices.Equal(got, want) {
		t.Fatalf("processes %v, Java %v", got, want)
	}
}
