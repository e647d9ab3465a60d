package coordinator

import (
	"fmt"
	"testing"
)

func assignAll(t *testing.T, a Assignor, members []AssignorMember, parts map[[16]byte]int32) map[string]Assignment {
	t.Helper()
	out := a.Assign(members, parts)
	seen := map[assignTP]string{}
	for id, as := range out {
		for tid, ps := range as {
			for _, p := range ps {
				if o, ok := seen[assignTP{tid, p}]; ok {
					t.Fatalf("%s: partition %d given to %s and %s", a.Name(), p, o, id)
				}
				seen[assignTP{tid, p}] = id
			}
		}
	}
	return out
}

func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	x, y := topicIDOf("x"), topicIDOf("y")
	parts := map[[16]byte]int32{x: 7, y: 5}
	var members []AssignorMember
	for i := range 3 {
		members = append(members, AssignorMember{ID: fmt.Sprintf("m%d", i), Topics: [][16]byte{x, y}})
	}
	out := assignAll(t, uniformAssignor{}, members, parts)
	for id, a := range out {
		if a.count() != 4 {
			t.Fatalf("%s has %d, want 4", id, a.count())
		}
	}
	// A fourth member: only 3 partitions move (one from each), the rest
	// stay put.
	for i := range members {
		members[i].Current = out[members[i].ID]
	}
	members = append(members, AssignorMember{ID: "m3", Topics: [][16]byte{x, y}})
	next := assignAll(t, uniformAssignor{}, members, parts)
	moved := 0
	for _, m := range members[:3] {
		for tid, ps := range m.Current {
			for _, p := range ps {
				if !next[m.ID].has(tid, p) {
					moved++
				}
			}
		}
		if n := next[m.ID].count(); n != 3 {
			t.Fatalf("%s has %d, want 3", m.ID, n)
		}
	}
	if moved != 3 || next["m3"].count() != 3 {
		t.Fatalf("moved %d, new member has %d; want 3 and 3", moved, next["m3"].count())
	}
}

func TestUniformAssignorHeterogeneous(t *testing.T) {
	x, y := topicIDOf("x"), topicIDOf("y")
	parts := map[[16]byte]int32{x: 6, y: 2}
	members := []AssignorMember{
		{ID: "a", Topics: [][16]byte{x, y}},
		{ID: "b", Topics: [][16]byte{x}},
		{ID: "c", Topics: [][16]byte{y}},
	}
	out := assignAll(t, uniformAssignor{}, members, parts)
	if out["c"].count() != 2 || len(out["c"][x]) != 0 {
		t.Fatalf("c (y only) got %v", out["c"])
	}
	if out["a"].count()+out["b"].count() != 6 || out["b"].count() < 2 || out["a"].count() < 2 {
		t.Fatalf("a %d b %d", out["a"].count(), out["b"].count())
	}
	// A topic nobody subscribes to is not assigned; unknown topics are
	// ignored.
	out = assignAll(t, uniformAssignor{}, []AssignorMember{{ID: "a", Topics: [][16]byte{topicIDOf("z")}}}, parts)
	if out["a"].count() != 0 {
		t.Fatalf("got %v", out["a"])
	}
}

func TestRangeAssignor(t *testing.T) {
	x, y := topicIDOf("x"), topicIDOf("y")
	parts := map[[16]byte]int32{x: 5, y: 5}
	members := []AssignorMember{{ID: "b", Topics: [][16]byte{x, y}}, {ID: "a", Topics: [][16]byte{x, y}}}
	out := assignAll(t, rangeAssignor{}, members, parts)
	// a sorts first: 0-2 of each topic, b 3-4: co-partitioned.
	for _, id := range [][16]byte{x, y} {
		if fmt.Sprint(out["a"][id]) != "[0 1 2]" || fmt.Sprint(out["b"][id]) != "[3 4]" {
			t.Fatalf("a %v b %v", out["a"][id], out["b"][id])
		}
	}
	if _, ok := assignorByName("org.apache.kafka.coordinator.group.assignor.RangeAssignor"); !ok {
		t.Fatal("class name not accepted")
	}
}

func TestUniformAssignorLargeHomogeneous(t *testing.T) {
	x, y := topicIDOf("x"), topicIDOf("y")
	parts := map[[16]byte]int32{x: 600, y: 401}
	var members []AssignorMember
	for i := range 7 {
		members = append(members, AssignorMember{ID: fmt.Sprintf("m%d", i), Topics: [][16]byte{x, y}})
	}
	out := assignAll(t, uniformAssignor{}, members, parts)
	for id, a := range out {
		if n := a.count(); n != 142 && n != 143 {
			t.Fatalf("%s has %d", id, n)
		}
	}
	// m3 leaves: the others keep all they had.
	var rest []AssignorMember
	for _, m := range members {
		if m.ID != "m3" {
			m.Current = out[m.ID]
			rest = append(rest, m)
		}
	}
	next := assignAll(t, uniformAssignor{}, rest, parts)
	total := 0
	for _, m := range rest {
		for tid, ps := range m.Current {
			for _, p := range ps {
				if !next[m.ID].has(tid, p) {
					t.Fatalf("%s lost %d though nobody joined", m.ID, p)
				}
			}
		}
		if n := next[m.ID].count(); n < 166 || n > 167 {
			t.Fatalf("%s has %d", m.ID, n)
		}
		total += next[m.ID].count()
	}
	if total != 1001 {
		t.Fatalf("assigned %d of 1001", total)
	}
}
