package diff

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompareMasksAndKeys checks that masked fields do not count, that
// keyed lists match entries by key whatever their order, and that a real
// difference is reported with its path.
func TestCompareMasksAndKeys(t *testing.T) {
	k := kmsg.NewPtrMetadataResponse()
	s := kmsg.NewPtrMetadataResponse()
	k.ThrottleMillis, s.ThrottleMillis = 5, 0
	k.ClusterID, s.ClusterID = kmsg.StringPtr("a"), kmsg.StringPtr("b")
	for _, name := range []string{"x", "y"} {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.TopicID = [16]byte{1}
		k.Topics = append(k.Topics, rt)
	}
	for _, name := range []string{"y", "x"} {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.TopicID = [16]byte{2}
		s.Topics = append(s.Topics, rt)
	}
	if d := Compare(k, s); len(d) != 0 {
		t.Fatalf("masked and reordered responses differ: %+v", d)
	}
	s.Topics[0].ErrorCode = 3
	s.Topics[1].TopicID = [16]byte{}
	d := Compare(k, s)
	var got []string
	for _, x := range d {
		got = append(got, x.Key()+": "+x.Kafka+" / "+x.Samsa)
	}
	want := []string{
		".Topics{x}.TopicID: set([1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0]) / unset([0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0])",
		".Topics{y}.ErrorCode: 0 / 3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"Fetch v* out-of-range .Topics[*].X: Kafka -1, samsa *", "Fetch v12 out-of-range .Topics[*].X: Kafka -1, samsa 22", true},
		{"Fetch v* out-of-range .Topics[*].X: Kafka -1, samsa *", "Fetch v12 out-of-range .Topics[*].Y: Kafka -1, samsa 22", false},
		{"DeleteTopics v0 * (outcome)", "DeleteTopics v0  (outcome)", true},
		{"a*", "b", false},
		{"*", "", true},
	} {
		if got := globMatch(c.pattern, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

func TestParseExplained(t *testing.T) {
	in := "# x\n## Other\n- `not this` — no\n" + explainedHeading + "\n\ntext\n- `A v* .B: Kafka 1, samsa 2` — because.\n- plain\n## Next\n- `nor this` — no\n"
	got, err := parseExplained(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Pattern != "A v* .B: Kafka 1, samsa 2" || got[0].Reason != "because." {
		t.Fatalf("got %+v", got)
	}
	sum := Summarize([]Pair{
		{Name: "A v3", Diffs: []FieldDiff{{Path: ".B", Kafka: "1", Samsa: "2"}}},
		{Name: "A v4", Diffs: []FieldDiff{{Path: ".C", Kafka: "1", Samsa: "2"}}},
		{Name: "A v5"},
	}, got)
	if sum.Compared != 3 || sum.Equal != 1 || sum.Different != 2 || sum.Explained != 1 || len(sum.Unexplained) != 1 || got[0].Used != 1 {
		t.Fatalf("summary %+v, used %d", sum, got[0].Used)
	}
}

// TestCompareErrorMessageNullness checks that ErrorMessage's text never
// counts, that its nullness counts where both results succeeded, and
// that it does not where either failed.
func TestCompareErrorMessageNullness(t *testing.T) {
	k := kmsg.NewPtrDescribeConfigsResponse()
	s := kmsg.NewPtrDescribeConfigsResponse()
	for _, r := range []*kmsg.DescribeConfigsResponse{k, s} {
		for _, name := range []string{"ok", "failed"} {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceName = name
			r.Resources = append(r.Resources, res)
		}
		r.Resources[1].ErrorCode = 3
	}
	k.Resources[0].ErrorMessage, s.Resources[0].ErrorMessage = kmsg.StringPtr("a"), kmsg.StringPtr("b")
	k.Resources[1].ErrorMessage = kmsg.StringPtr("unknown topic")
	if d := Compare(k, s); len(d) != 0 {
		t.Fatalf("messages' text or a failed result's null counted: %+v", d)
	}
	s.Resources[0].ErrorMessage = nil
	d := Compare(k, s)
	if len(d) != 1 || d[0].Path != ".Resources[0].ErrorMessage" || d[0].Kafka != `"a"` || d[0].Samsa != "null" {
		t.Fatalf("got %+v, want the successful result's null message", d)
	}
}
