package systests

import (
	"fmt"
	"slices"
	"strings"
)

// ValidateDelivery is ProduceConsumeValidateTest's check (kafkatest
// utils.validate_delivery): every acknowledged value was consumed, and, when
// the producer was idempotent, nothing was consumed twice. It returns
// whether the delivery is valid and a description of what is wrong (or,
// for tolerated duplicates, of what was seen).
func ValidateDelivery(acked, consumed []int64, idempotent bool) (bool, string) {
	ok := true
	var msg strings.Builder
	seen := make(map[int64]int, len(consumed))
	for _, v := range consumed {
		seen[v]++
	}
	var missing []int64
	for _, v := range acked {
		if seen[v] == 0 {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		ok = false
		slices.Sort(missing)
		fmt.Fprintf(&msg, "%d acknowledged messages were not consumed (lost): %v\n", len(missing), head(missing, 20))
	}
	dups := len(consumed) - len(seen)
	if dups > 0 {
		if idempotent {
			ok = false
			fmt.Fprintf(&msg, "%d duplicates even though the producer was idempotent\n", dups)
		} else {
			fmt.Fprintf(&msg, "(%d duplicates, acceptable without idempotence)\n", dups)
		}
	}
	return ok, msg.String()
}

// ExactlyOnce checks a transactional copy: output holds every input value
// exactly once and nothing else. When ordered, output must also equal input
// in order (check_order of transactions_test.py).
func ExactlyOnce(input, output []int64, ordered bool) (bool, string) {
	var msg strings.Builder
	in := make(map[int64]int, len(input))
	for _, v := range input {
		in[v]++
	}
	out := make(map[int64]int, len(output))
	dups := 0
	for _, v := range output {
		out[v]++
		if out[v] == 2 {
			dups++
		}
	}
	var missing, extra []int64
	for v := range in {
		if out[v] == 0 {
			missing = append(missing, v)
		}
	}
	for v := range out {
		if in[v] == 0 {
			extra = append(extra, v)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if dups > 0 {
		fmt.Fprintf(&msg, "%d values appear more than once in the output\n", dups)
	}
	if len(missing) > 0 {
		fmt.Fprintf(&msg, "%d input values are missing from the output: %v\n", len(missing), head(missing, 20))
	}
	if len(extra) > 0 {
		fmt.Fprintf(&msg, "%d output values were never input: %v\n", len(extra), head(extra, 20))
	}
	if ordered && msg.Len() == 0 && !slices.Equal(input, output) {
		for i := range input {
			if input[i] != output[i] {
				fmt.Fprintf(&msg, "output out of order at index %d: %d, want %d\n", i, output[i], input[i])
				break
			}
		}
	}
	return msg.Len() == 0, msg.String()
}

func head(v []int64, n int) []int64 {
	if len(v) > n {
		return v[:n]
	}
	return v
}
