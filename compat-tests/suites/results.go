package suites

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ErrSuitesBadEvent is returned for a line of `go test -json` output that is
// not a test2json event.
var ErrSuitesBadEvent = errors.New("suites: not a go test -json event")

// Outcome is a test's result as `go test -json` reports it.
type Outcome string

// The outcomes. Incomplete is a test that started and never ended (the
// test binary timed out or crashed while it ran).
const (
	Pass       Outcome = "PASS"
	Fail       Outcome = "FAIL"
	Skip       Outcome = "SKIP"
	Incomplete Outcome = "INCOMPLETE"
)

// Result is one test's (or subtest's) outcome.
type Result struct {
	Package string
	// Test is the test's name; subtests are Parent/Child.
	Test    string
	Outcome Outcome
	// Seconds is the test's elapsed time (0 when Incomplete).
	Seconds float64
	// Output is the test's own output lines (for failures).
	Output []string
}

// TopLevel reports whether r is a test function rather than a subtest.
func (r Result) TopLevel() bool { return !strings.Contains(r.Test, "/") }

// event is one line of test2json output.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Parse reads `go test -json` output and returns every test's result in
// the order the tests started. Lines that are not JSON objects (a build
// error printed by go test) are skipped; a JSON line that is not an event
// is an error.
func Parse(r io.Reader) ([]Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	index := map[string]int{}
	var out []Result
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSuitesBadEvent, err)
		}
		if e.Test == "" {
			continue
		}
		key := e.Package + "\x00" + e.Test
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Result{Package: e.Package, Test: e.Test, Outcome: Incomplete})
		}
		switch e.Action {
		case "pass":
			out[i].Outcome, out[i].Seconds = Pass, e.Elapsed
		case "fail":
			out[i].Outcome, out[i].Seconds = Fail, e.Elapsed
		case "skip":
			out[i].Outcome, out[i].Seconds = Skip, e.Elapsed
		case "output":
			out[i].Output = append(out[i].Output, strings.TrimRight(e.Output, "\n"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("suites: reading go test output: %w", err)
	}
	return out, nil
}

// Counts is the number of top-level tests by outcome.
type Counts map[Outcome]int

// Count counts the top-level tests of results by outcome.
func Count(results []Result) Counts {
	c := Counts{}
	for _, r := range results {
		if r.TopLevel() {
			c[r.Outcome]++
		}
	}
	return c
}

// String is "N pass, N fail, N skip" (and incomplete ones when any).
func (c Counts) String() string {
	s := fmt.Sprintf("%d pass, %d fail, %d skip", c[Pass], c[Fail], c[Skip])
	if n := c[Incomplete]; n > 0 {
		s += fmt.Sprintf(", %d incomplete", n)
	}
	return s
}

// Column is one run's results under a label (the broker's name).
type Column struct {
	Label   string
	Results []Result
}

// Table writes one line per test function of any column (and per subtest
// that failed, did not end, or differs between columns), sorted by package
// and name, with each column's outcome ("-" where a column has no such
// test), then each column's counts of test functions. Lines whose outcomes
// differ between columns are marked with "*".
func Table(w io.Writer, cols []Column) error {
	type row struct{ pkg, test string }
	seen := map[row]bool{}
	var rows []row
	outcome := make([]map[row]Outcome, len(cols))
	for i, c := range cols {
		outcome[i] = map[row]Outcome{}
		for _, r := range c.Results {
			outcome[i][row{r.Package, r.Test}] = r.Outcome
		}
	}
	// Rows: every test function, and the subtests that failed or did not
	// end in some column, or whose outcomes differ.
	for i, c := range cols {
		for _, r := range c.Results {
			k := row{r.Package, r.Test}
			if seen[k] {
				continue
			}
			show := r.TopLevel()
			for j := range cols {
				o, ok := outcome[j][k]
				show = show || !ok || o != outcome[i][k] || o == Fail || o == Incomplete
			}
			if show {
				seen[k] = true
				rows = append(rows, k)
			}
		}
	}
	sort.Slice(rows, func(a, b int) bool {
		if rows[a].pkg != rows[b].pkg {
			return rows[a].pkg < rows[b].pkg
		}
		return rows[a].test < rows[b].test
	})
	var b strings.Builder
	fmt.Fprintf(&b, "  %-60s", "package test")
	for _, c := range cols {
		fmt.Fprintf(&b, " %-10s", c.Label)
	}
	b.WriteString("\n")
	for _, k := range rows {
		differ := false
		line := ""
		for i := range cols {
			o, ok := outcome[i][k]
			s := string(o)
			if !ok {
				s = "-"
			}
			if i > 0 && o != outcome[0][k] {
				differ = true
			}
			line += fmt.Sprintf(" %-10s", s)
		}
		mark := " "
		if differ {
			mark = "*"
		}
		name := k.test
		if short := shortPackage(k.pkg); short != "" {
			name = short + " " + k.test
		}
		fmt.Fprintf(&b, "%s %-60s%s\n", mark, name, line)
	}
	for _, c := range cols {
		fmt.Fprintf(&b, "%s: %s\n", c.Label, Count(c.Results))
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("suites: writing the table: %w", err)
	}
	return nil
}

// shortPackage drops the module path of the two suites from a package path.
func shortPackage(pkg string) string {
	for _, m := range []string{"github.com/twmb/franz-go/", "github.com/segmentio/kafka-go"} {
		if rest, ok := strings.CutPrefix(pkg, m); ok {
			rest = strings.TrimPrefix(rest, "/")
			if rest == "" {
				return "."
			}
			return rest
		}
	}
	return pkg
}
