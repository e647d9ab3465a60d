package diff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Pair is one step of the script as each broker answered it.
type Pair struct {
	Name         string
	Kafka, Samsa Step
	Diffs        []FieldDiff
}

// ErrDiffScript is returned when the two runs of the script took
// different paths (a step of one has no counterpart in the other).
var ErrDiffScript = errors.New("diff: the script took different paths on the two brokers")

// Pairs matches the two runs' steps by name and occurrence and compares
// each pair. Steps only one broker ran are returned as unmatched names.
func Pairs(kafka, samsa []Step) (pairs []Pair, unmatched []string) {
	type key struct {
		name string
		n    int
	}
	seen := map[string]int{}
	sm := map[key]Step{}
	for _, st := range samsa {
		sm[key{st.Name, seen[st.Name]}] = st
		seen[st.Name]++
	}
	seen = map[string]int{}
	used := map[key]bool{}
	for _, st := range kafka {
		k := key{st.Name, seen[st.Name]}
		seen[st.Name]++
		ss, ok := sm[k]
		if !ok {
			unmatched = append(unmatched, "only Kafka ran: "+st.Name)
			continue
		}
		used[k] = true
		pairs = append(pairs, comparePair(st, ss))
	}
	for k := range sm {
		if !used[k] {
			unmatched = append(unmatched, "only samsa ran: "+k.name)
		}
	}
	sort.Strings(unmatched)
	return pairs, unmatched
}

func comparePair(k, s Step) Pair {
	p := Pair{Name: k.Name, Kafka: k, Samsa: s}
	if k.Outcome != "" || s.Outcome != "" || k.Resp == nil || s.Resp == nil {
		if k.Outcome != s.Outcome {
			p.Diffs = []FieldDiff{{Path: "(outcome)", Kafka: outcome(k), Samsa: outcome(s)}}
		}
		return p
	}
	normalize(k.Resp)
	normalize(s.Resp)
	p.Diffs = Compare(k.Resp, s.Resp)
	return p
}

func outcome(s Step) string {
	if s.Outcome == "" {
		return "answered"
	}
	return s.Outcome
}

// ID names one difference for the explained list: the step name with its
// version, the field with indexes starred, and the two values:
// "Fetch v4 out-of-range .Topics[*].Partitions[*].HighWatermark: Kafka -1, samsa 22".
func (p Pair) ID(d FieldDiff) string {
	return p.Name + " " + d.Key() + ": Kafka " + d.Kafka + ", samsa " + d.Samsa
}

// Explained is one entry of the explained-differences list: a pattern
// over difference ids where '*' matches any run of characters, and why.
type Explained struct {
	Pattern, Reason string
	// Used counts the differences it explained in this run.
	Used int
}

// Match reports whether id matches the pattern.
func (e *Explained) Match(id string) bool { return globMatch(e.Pattern, id) }

// globMatch matches pattern against s; '*' matches any run of characters,
// every other character itself.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		if pattern[0] == '*' {
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			if pattern == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern, s[i:]) {
					return true
				}
			}
			return false
		}
		if s == "" || s[0] != pattern[0] {
			return false
		}
		pattern, s = pattern[1:], s[1:]
	}
	return s == ""
}

// explainedHeading opens the list in FINDINGS.md.
const explainedHeading = "## Differential suite: explained differences"

// ReadExplained reads the explained differences from the section of
// FINDINGS.md under explainedHeading: one "- `pattern` — reason" line
// each, up to the next "## " heading.
func ReadExplained(path string) ([]*Explained, error) {
	return ReadExplainedSection(path, explainedHeading)
}

// ReadExplainedSection reads the explained differences under heading.
func ReadExplainedSection(path, heading string) ([]*Explained, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	defer f.Close()
	return parseExplainedSection(f, heading)
}

func parseExplained(r io.Reader) ([]*Explained, error) {
	return parseExplainedSection(r, explainedHeading)
}

func parseExplainedSection(r io.Reader, heading string) ([]*Explained, error) {
	var out []*Explained
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == heading
			continue
		}
		if !in || !strings.HasPrefix(line, "- `") {
			continue
		}
		rest := line[3:]
		end := strings.Index(rest, "`")
		if end < 0 {
			return nil, fmt.Errorf("%w: unterminated pattern: %s", ErrDiffExplained, line)
		}
		reason := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(rest[end+1:]), "—-:"))
		out = append(out, &Explained{Pattern: rest[:end], Reason: reason})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	return out, nil
}

// ErrDiffExplained is returned for a malformed explained list.
var ErrDiffExplained = errors.New("diff: bad explained-differences list")

// Summary is the outcome of a run: counts and the differences grouped by
// API and field.
type Summary struct {
	Compared, Equal, Different, Explained int
	// Unexplained lists each difference no entry explains, by id, with
	// the two values of its first occurrence.
	Unexplained []string
	// ByField counts differences (explained or not) per API and field key.
	ByField map[string]int
}

// Summarize counts the pairs and matches each difference against the
// explained list. A pair counts as explained when every one of its
// differences is.
func Summarize(pairs []Pair, explained []*Explained) Summary {
	sum := Summary{ByField: map[string]int{}}
	firstSeen := map[string]bool{}
	for _, p := range pairs {
		sum.Compared++
		if len(p.Diffs) == 0 {
			sum.Equal++
			continue
		}
		sum.Different++
		all := true
		api := strings.SplitN(p.Name, " ", 2)[0]
		for _, d := range p.Diffs {
			sum.ByField[api+" "+d.Key()]++
			id := p.ID(d)
			var hit *Explained
			for _, e := range explained {
				if e.Match(id) {
					hit = e
					break
				}
			}
			if hit != nil {
				hit.Used++
				continue
			}
			all = false
			if !firstSeen[id] {
				firstSeen[id] = true
				sum.Unexplained = append(sum.Unexplained, id)
			}
		}
		if all {
			sum.Explained++
		}
	}
	return sum
}

// Format renders the summary for the test log.
func (s Summary) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests compared: %d, equal: %d, different: %d (explained: %d, unexplained: %d)\n",
		s.Compared, s.Equal, s.Different, s.Explained, s.Different-s.Explained)
	keys := make([]string, 0, len(s.ByField))
	for k := range s.ByField {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("differences by API and field:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %4d  %s\n", s.ByField[k], k)
	}
	if len(s.Unexplained) > 0 {
		b.WriteString("unexplained differences (first occurrence of each):\n")
		for _, u := range s.Unexplained {
			fmt.Fprintf(&b, "  %s\n", u)
		}
	}
	return b.String()
}
