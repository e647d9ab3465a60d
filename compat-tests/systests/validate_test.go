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
