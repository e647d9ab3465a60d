package replica

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestHighWatermark(t *testing.T) {
	fs := func(leos ...int64) map[int32]FollowerState {
		m := map[int32]FollowerState{}
		for i, leo := range leos {
			m[int32(i+2)] = FollowerState{LogEndOffset: leo}
		}
		return m
	}
	for _, c := range []struct {
		name      string
		current   int64
		leaderLEO int64
		isr       []int32
		followers map[int32]FollowerState
		want      int64
	}{
		{"single replica: LEO", 0, 10, []int32{1}, nil, 10},
		{"min over ISR", 0, 10, []int32{1, 2, 3}, fs(7, 9), 7},
		{"replica outside ISR ignored", 0, 10, []int32{1, 3}, fs(2, 9), 9},
		{"never moves back", 8, 10, []int32{1, 2}, fs(5), 8},
		{"unknown follower LEO holds it", 4, 10, []int32{1, 2}, fs(-1), 4},
		{"missing follower holds it", 4, 10, []int32{1, 5}, nil, 4},
		{"follower ahead of leader (stale state)", 0, 10, []int32{1, 2}, fs(12), 10},
	} {
		if got := HighWatermark(c.current, 1, c.leaderLEO, c.isr, c.followers); got != c.want {
			t.Errorf("%s: HighWatermark = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestUpdateFollowerFetch walks Kafka's lastCaughtUpTimeMs semantics: a
// fetch at the leader's LEO is caught up now; a fetch that reached what the
// leader had at the previous fetch is caught up as of that fetch.
func TestUpdateFollowerFetch(t *testing.T) {
	s := FollowerState{LogEndOffset: -1}
	steps := []struct {
		fetchOffset, leaderLEO int64
		at                     int
		wantCaughtUp           int // -1 = zero time
	}{
		{0, 10, 0, -1},     // behind, first fetch: not caught up
		{10, 20, 100, 0},   // reached LEO of the previous fetch (10): caught up as of t=0
		{15, 30, 200, 0},   // behind the previous fetch's LEO (20): unchanged
		{30, 30, 300, 300}, // at the LEO: now
		{30, 50, 900, 300}, // behind (50) but reached the previous fetch's LEO (30): as of that fetch, 300
	}
	for i, st := range steps {
		s = UpdateFollowerFetch(s, st.fetchOffset, st.leaderLEO, ms(st.at))
		want := time.Time{}
		if st.wantCaughtUp >= 0 {
			want = ms(st.wantCaughtUp)
		}
		if !s.LastCaughtUp.Equal(want) || s.LogEndOffset != st.fetchOffset {
			t.Fatalf("step %d: caught up %v LEO %d, want %v %d", i, s.LastCaughtUp.Sub(t0), s.LogEndOffset, want.Sub(t0), st.fetchOffset)
		}
	}
}

func TestOutOfSyncReplicas(t *testing.T) {
	followers := map[int32]FollowerState{
		2: {LastCaughtUp: ms(0)},
		3: {LastCaughtUp: ms(25_000)},
		4: {LastCaughtUp: ms(0)},
	}
	lag := 30 * time.Second
	if got := OutOfSyncReplicas(1, []int32{1, 2, 3}, followers, ms(30_000), lag); len(got) != 0 {
		t.Fatalf("at exactly the lag: %v", got)
	}
	if got := OutOfSyncReplicas(1, []int32{1, 2, 3}, followers, ms(30_001), lag); !slices.Equal(got, []int32{2}) {
		t.Fatalf("past the lag: %v", got)
	}
	if got := OutOfSyncReplicas(1, []int32{1, 2, 3, 5}, followers, ms(60_000), lag); !slices.Equal(got, []int32{2, 3, 5}) {
		t.Fatalf("never fetched counts as out of sync: %v", got)
	}
	if got := OutOfSyncReplicas(1, []int32{1}, followers, ms(1e9), lag); len(got) != 0 {
		t.Fatalf("leader alone: %v", got)
	}
}

func TestCanJoinISR(t *testing.T) {
	replicas := []int32{1, 2, 3}
	for _, c := range []struct {
		name             string
		id               int32
		isr              []int32
		leo, hw, epochSt int64
		want             bool
	}{
		{"caught up", 3, []int32{1, 2}, 10, 10, 5, true},
		{"below HW", 3, []int32{1, 2}, 9, 10, 5, false},
		{"below epoch start", 3, []int32{1, 2}, 10, 8, 12, false},
		{"already in", 2, []int32{1, 2}, 10, 10, 5, false},
		{"not a replica", 4, []int32{1, 2}, 10, 10, 5, false},
	} {
		if got := CanJoinISR(c.id, replicas, c.isr, c.leo, c.hw, c.epochSt); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestMaximalISRAndWithout(t *testing.T) {
	if got := MaximalISR([]int32{1, 2, 3}, []int32{1, 2}); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("shrink pending: %v", got)
	}
	if got := MaximalISR([]int32{1, 2}, []int32{1, 2, 3}); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("expand pending: %v", got)
	}
	if got := Without([]int32{1, 2, 3}, []int32{2}); !slices.Equal(got, []int32{1, 3}) {
		t.Fatalf("Without: %v", got)
	}
}

func TestDivergingEpoch(t *testing.T) {
	for _, c := range []struct {
		name         string
		lastEpoch    int32
		fetchOffset  int64
		endEpoch     int32
		endOffset    int64
		wantE        int32
		wantO        int64
		wantDiverged bool
	}{
		{"no epoch sent", -1, 10, 3, 10, -1, -1, false},
		{"same epoch, still going", 3, 10, 3, 20, -1, -1, false},
		{"same epoch at its end", 3, 10, 3, 10, -1, -1, false},
		{"epoch ended before fetch offset", 3, 12, 3, 10, 3, 10, true},
		{"leader lacks the epoch", 4, 12, 3, 11, 3, 11, true},
		{"leader knows nothing that old", 1, 5, -1, -1, -1, -1, true},
	} {
		e, o, d := DivergingEpoch(c.lastEpoch, c.fetchOffset, c.endEpoch, c.endOffset)
		if e != c.wantE || o != c.wantO || d != c.wantDiverged {
			t.Errorf("%s: %d %d %v", c.name, e, o, d)
		}
	}
}

func TestTruncationOffset(t *testing.T) {
	// Follower epochs: 1 at 0, 3 at 10, 4 at 20; LEO 30, HW 15.
	local := func(epoch int32) (int32, int64) {
		switch {
		case epoch >= 4:
			return 4, 30
		case epoch == 3:
			return 3, 20
		case epoch >= 1:
			return 1, 10
		}
		return -1, -1
	}
	for _, c := range []struct {
		name     string
		epoch    int32
		end      int64
		want     int64
		wantDone bool
	}{
		{"leader has same epoch, ends earlier", 3, 17, 17, true},
		{"leader has same epoch, ends later", 3, 25, 20, true},
		{"leader's epoch 2 unknown here: our older epoch", 2, 14, 10, false},
		{"leader ends past our LEO", 4, 40, 30, true},
		{"leader knows no epoch", -1, -1, 15, true},
		{"we have nothing that old", 0, 5, 5, true},
	} {
		got, done := TruncationOffset(c.epoch, c.end, local, 30, 15)
		if got != c.want || done != c.wantDone {
			t.Errorf("%s: %d %v, want %d %v", c.name, got, done, c.want, c.wantDone)
		}
	}
}

// TestUnderMinISR: the strict min ISR rule with Kafka's effective min ISR
// (min.insync.replicas capped at the replica count).
func TestUnderMinISR(t *testing.T) {
	for _, tc := range []struct {
		isr, replicas, minISR int
		under                 bool
	}{
		{3, 3, 2, false},
		{2, 3, 2, false},
		{1, 3, 2, true},
		{1, 1, 2, false}, // RF=1: the effective min ISR is 1
		{2, 2, 3, false}, // RF=2 with min.insync.replicas=3: capped at 2
		{1, 2, 3, true},
		{1, 3, 1, false},
	} {
		if got := UnderMinISR(tc.isr, tc.replicas, tc.minISR); got != tc.under {
			t.Errorf("UnderMinISR(isr %d, replicas %d, min %d) = %v", tc.isr, tc.replicas, tc.minISR, got)
		}
	}
}
