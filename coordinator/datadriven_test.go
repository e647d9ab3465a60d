package coordinator

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite regenerates the expected output of testdata files:
//
//	go test ./coordinator/ -run TestGroupDataDriven -rewrite
var rewrite = flag.Bool("rewrite", false, "rewrite testdata golden output")

// ddCase is one command of a golden file: a command line, then "----",
// then the output up to a blank line (in the spirit of etcd-io/raft's
// interaction tests).
type ddCase struct {
	line   int
	cmd    string
	args   map[string]string
	keys   []string // argument names in order
	output string
}

func parseDD(t *testing.T, path string) (cases []ddCase, comments map[int][]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	comments = map[int][]string{}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "#") {
			comments[len(cases)] = append(comments[len(cases)], lines[i])
			continue
		}
		c := ddCase{line: i + 1, args: map[string]string{}}
		fields := strings.Fields(l)
		c.cmd = fields[0]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.args[k] = v
			c.keys = append(c.keys, k)
		}
		i++
		if i >= len(lines) || strings.TrimSpace(lines[i]) != "----" {
			t.Fatalf("%s:%d: want ---- after command", path, c.line)
		}
		var out []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			out = append(out, lines[i])
		}
		c.output = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, comments
}

// runDD runs every testdata file matching glob through run, comparing or
// (with -rewrite) replacing each command's output.
func runDD(t *testing.T, glob string, newRunner func() func(c *ddCase) string) {
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files for %s: %v", glob, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cases, comments := parseDD(t, path)
			run := newRunner()
			var b strings.Builder
			for i := range cases {
				c := &cases[i]
				got := strings.TrimRight(run(c), "\n")
				if got == "" {
					got = "ok"
				}
				for _, cm := range comments[i] {
					b.WriteString(cm + "\n")
				}
				b.WriteString(c.cmd)
				for _, k := range c.keys {
					if v := c.args[k]; v != "" {
						fmt.Fprintf(&b, " %s=%s", k, v)
					} else {
						fmt.Fprintf(&b, " %s", k)
					}
				}
				b.WriteString("\n----\n" + got + "\n\n")
				if !*rewrite && got != c.output {
					t.Errorf("%s:%d: %s\nwant:\n%s\ngot:\n%s", path, c.line, c.cmd, c.output, got)
				}
			}
			for _, cm := range comments[len(cases)] {
				b.WriteString(cm + "\n")
			}
			if *rewrite {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
