package config

import (
	"fmt"
	"strings"
)

// settingsUsage lists every broker setting with its default and the
// environment variable that sets it, for --help: a user of a shell-less image
// has no other way to see what a setting defaults to. Dynamic settings are
// marked; the docs of each are in docs/CONFIG.md.
func settingsUsage() string {
	var b strings.Builder
	b.WriteString("\nSettings (default; environment variable):\n")
	for _, d := range BrokerDefs {
		dflt := "null"
		if d.HasDefault {
			dflt = d.Default
			if dflt == "" {
				dflt = `""`
			}
		}
		mark := ""
		if d.Dynamic {
			mark = " (dynamic)"
		}
		fmt.Fprintf(&b, "  %-44s %s  [%s%s]\n", d.Name, dflt, KeyToEnv(d.Name), mark)
	}
	return b.String()
}
