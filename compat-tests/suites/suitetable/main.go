// Command suitetable prints the results of `go test -json` runs side by side,
// one line per test, for compat-tests/suites/run.sh:
//
//	go run ./compat-tests/suites/suitetable samsa=/tmp/a/test.json kafka=/tmp/b/test.json
//
// Lines whose outcomes differ between the runs are marked with "*"; each
// run's pass/fail/skip counts follow.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/samsa-broker/samsa/compat-tests/suites"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: suitetable LABEL=FILE.json ...")
		os.Exit(2)
	}
	var cols []suites.Column
	for _, arg := range os.Args[1:] {
		label, path, ok := strings.Cut(arg, "=")
		if !ok {
			label, path = arg, arg
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		results, err := suites.Parse(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		cols = append(cols, suites.Column{Label: label, Results: results})
	}
	if err := suites.Table(os.Stdout, cols); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
