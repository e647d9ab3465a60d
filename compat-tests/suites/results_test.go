package suites

import (
	"errors"
	"strings"
	"testing"
)

// goTestJSON is `go test -json` output of a package with a passing test, a
// failing one with a failing subtest, a skipped one and one that never ended
// (the binary timed out), after a line go test prints outside JSON.
const goTestJSON = `# a build line
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestB/sub"}
{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:9: boom\n"}
{"Action":"fail","Package":"p","Test":"TestB/sub","Elapsed":0.2}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0.3}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"output","Package":"p","Output":"panic: test timed out\n"}
{"Action":"fail","Package":"p","Elapsed":30}
`

func TestParse(t *testing.T) {
	results, err := Parse(strings.NewReader(goTestJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		test    string
		outcome Outcome
	}{{"TestA", Pass}, {"TestB", Fail}, {"TestB/sub", Fail}, {"TestC", Skip}, {"TestD", Incomplete}}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(results), len(want), results)
	}
	for i, w := range want {
		if results[i].Test != w.test || results[i].Outcome != w.outcome {
			t.Errorf("result %d: got %s %s, want %s %s", i, results[i].Test, results[i].Outcome, w.test, w.outcome)
		}
	}
	if got := results[2].Output; len(got) != 1 || !strings.Contains(got[0], "boom") {
		t.Errorf("TestB/sub output: got %q", got)
	}
	if got := Count(results).String(); got != "1 pass, 1 fail, 1 skip, 1 incomplete" {
		t.Errorf("counts: got %q", got)
	}
}

func TestParseBadEvent(t *testing.T) {
	if _, err := Parse(strings.NewReader("{not json\n")); !errors.Is(err, ErrSuitesBadEvent) {
		t.Fatalf("got %v, want ErrSuitesBadEvent", err)
	}
}

func TestTableMarksDifferences(t *testing.T) {
	a, err := Parse(strings.NewReader(goTestJSON))
	if err != nil {
		t.Fatal(err)
	}
	b := []Result{{Package: "p", Test: "TestA", Outcome: Pass}, {Package: "p", Test: "TestB", Outcome: Pass}}
	var out strings.Builder
	if err := Table(&out, []Column{{"samsa", a}, {"kafka", b}}); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "*" {
			lines[f[2]] = l
		} else if len(f) >= 2 {
			lines[f[1]] = l
		}
	}
	for test, mark := range map[string]string{"TestA": " ", "TestB": "*", "TestB/sub": "*", "TestC": "*", "TestD": "*"} {
		l, ok := lines[test]
		if !ok {
			t.Errorf("no line for %s in\n%s", test, out.String())
			continue
		}
		if l[:1] != mark {
			t.Errorf("line for %s marked %q, want %q: %s", test, l[:1], mark, l)
		}
	}
	if !strings.Contains(out.String(), "kafka: 2 pass, 0 fail, 0 skip") {
		t.Errorf("no kafka counts in\n%s", out.String())
	}
}
