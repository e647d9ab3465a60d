package broker

import "testing"

func TestInternalTopicReplication(t *testing.T) {
	for _, c := range []struct {
		configured   int16
		staticVoters int
		combined     bool
		want         int16
	}{
		{3, 1, true, 1},  // the single-node quick start
		{3, 2, true, 2},  // a two-node test cluster
		{3, 3, true, 3},  // three combined nodes
		{3, 5, true, 3},  // more voters than the factor
		{1, 3, true, 1},  // configured below the voters
		{3, 1, false, 3}, // a controller-only node: brokers are counted, not voters
		{3, 0, true, 3},  // dynamic quorum of combined nodes: no cap
		{3, 0, false, 3}, // dynamic quorum of controllers
	} {
		if got := internalTopicReplication(c.configured, c.staticVoters, c.combined); got != c.want {
			t.Errorf("internalTopicReplication(%d, %d voters, combined %v) = %d, want %d", c.configured, c.staticVoters, c.combined, got, c.want)
		}
	}
}
