package systests

import "testing"

func TestValidateDelivery(t *testing.T) {
	for _, c := range []struct {
		name            string
		acked, consumed []int64
		idempotent      bool
		ok              bool
	}{
		{"all consumed", []int64{1, 2, 3}, []int64{3, 1, 2}, true, true},
		{"unacked extra is fine", []int64{1, 2}, []int64{1, 2, 3}, true, true},
		{"lost", []int64{1, 2, 3}, []int64{1, 3}, false, false},
		{"duplicate idempotent", []int64{1, 2}, []int64{1, 2, 2}, true, false},
		{"duplicate tolerated", []int64{1, 2}, []int64{1, 2, 2}, false, true},
	} {
		if ok, msg := ValidateDelivery(c.acked, c.consumed, c.idempotent); ok != c.ok {
			t.Errorf("%s: ok=%v (%s), want %v", c.name, ok, msg, c.ok)
		}
	}
}

func TestExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		in, out []int64
		ordered bool
		ok      bool
	}{
		{"same set", []int64{1, 2, 3}, []int64{2, 1, 3}, false, true},
		{"same set unordered", []int64{1, 2, 3}, []int64{2, 1, 3}, true, false},
		{"ordered", []int64{1, 2, 3}, []int64{1, 2, 3}, true, true},
		{"duplicate", []int64{1, 2, 3}, []int64{1, 2, 3, 3}, false, false},
		{"missing", []int64{1, 2, 3}, []int64{1, 2}, false, false},
		{"extra", []int64{1, 2}, []int64{1, 2, 7}, false, false},
	} {
		if ok, msg := ExactlyOnce(c.in, c.out, c.ordered); ok != c.ok {
			t.Errorf("%s: ok=%v (%s), want %v", c.name, ok, msg, c.ok)
		}
	}
}

func TestForeignNodes(t *testing.T) {
	log := `DEBUG Added fetch request for partition t-2 at position FetchPosition{offset=7, currentLeader=LeaderAndEpoch{leader=Optional[127.0.0.1:26443 (id: 2 rack: null isFenced: false)], epoch=4}} to node 127.0.0.1:26443 (id: 2 rack: null isFenced: false)
DEBUG Sending fetch to broker 127.0.0.1:40257 (id: 2 rack: null isFenced: false)
DEBUG Sending metadata to broker localhost:40258 (id: -1 rack: null isFenced: false)`
	got := ForeignNodes(log, []string{"127.0.0.1:40257", "127.0.0.1:40258"})
	if len(got) != 1 || got[0] != "127.0.0.1:26443 (id: 2)" {
		t.Errorf("ForeignNodes = %q, want the PLAINTEXT port of node 2 alone", got)
	}
	if got := ForeignNodes(log, []string{"127.0.0.1:40257", "127.0.0.1:40258", "127.0.0.1:26443"}); len(got) != 0 {
		t.Errorf("ForeignNodes = %q, want none", got)
	}
}
