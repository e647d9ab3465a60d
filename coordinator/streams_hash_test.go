package coordinator

import (
	"slices"
	"testing"
)

// TestJavaHashOrder: the orders a java.util.HashMap iterates these keys in
// (printed by a JDK 21 HashMap of them, put in this order).
func TestJavaHashOrder(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"diff-sg0-counts-repartition", "diff-sg0-counts-changelog"}, []string{"diff-sg0-counts-repartition", "diff-sg0-counts-changelog"}},
		{[]string{"diff-sg1-counts-repartition", "diff-sg1-counts-changelog"}, []string{"diff-sg1-counts-changelog", "diff-sg1-counts-repartition"}},
		{[]string{"a-rep", "b-cl", "c-x", "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition", "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"},
			[]string{"app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog", "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition", "b-cl", "a-rep", "c-x"}},
	} {
		if got := javaHashOrder(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%v: got %v, want %v", c.in, got, c.want)
		}
	}
}
