package config

import (
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMappingRule is one rule of ssl.principal.mapping.rules: DEFAULT
// (the distinguished name unchanged) or RULE:pattern/replacement/[LU],
// where the pattern must match the whole distinguished name and L or U
// turn the result to lower or upper case.
type PrincipalMappingRule struct {
	Default     bool
	Pattern     *regexp.Regexp
	Replacement string // in Go's regexp syntax (${1})
	Case        byte   // 0, 'L' or 'U'
}

// ErrNoMatchingRule is returned by MapPrincipal when no rule matches a
// distinguished name; Kafka then fails the TLS authentication.
var ErrNoMatchingRule = fmt.Errorf("config: no ssl.principal.mapping.rules rule matches")

var javaGroupRef = regexp.MustCompile(`\$(\d+)`)

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules: rules
// separated by commas or new lines, in order. A comma inside a rule's
// pattern or replacement must be escaped as Kafka requires ("\,").
func ParsePrincipalMappingRules(s string) ([]PrincipalMappingRule, error) {
	var rules []PrincipalMappingRule
	rest := strings.TrimSpace(s)
	for rest != "" {
		rest = strings.TrimLeft(rest, " \t\r\n,")
		if rest == "" {
			break
		}
		if r, ok := strings.CutPrefix(rest, "DEFAULT"); ok {
			rules = append(rules, PrincipalMappingRule{Default: true})
			rest = r
			continue
		}
		r, ok := strings.CutPrefix(rest, "RULE:")
		if !ok {
			return nil, fmt.Errorf("invalid rule at %q: want DEFAULT or RULE:pattern/replacement/[LU]", rest)
		}
		// pattern and replacement end at an unescaped '/'.
		var parts [2]string
		for i := range parts {
			var b strings.Builder
			j := 0
			for ; j < len(r) && r[j] != '/'; j++ {
				if r[j] == '\\' && j+1 < len(r) {
					if r[j+1] == '/' || r[j+1] == ',' {
						j++
					} else {
						b.WriteByte(r[j])
						j++
					}
				}
				b.WriteByte(r[j])
			}
			if j >= len(r) {
				return nil, fmt.Errorf("invalid rule %q: missing '/'", rest)
			}
			parts[i] = b.String()
			r = r[j+1:]
		}
		rule := PrincipalMappingRule{Replacement: javaGroupRef.ReplaceAllString(parts[1], "$${$1}")}
		if len(r) > 0 && (r[0] == 'L' || r[0] == 'U') {
			rule.Case = r[0]
			r = r[1:]
		}
		re, err := regexp.Compile("^(?:" + parts[0] + ")$")
		if err != nil {
			return nil, fmt.Errorf("invalid rule pattern %q: %v", parts[0], err)
		}
		rule.Pattern = re
		rules = append(rules, rule)
		rest = r
		if rest != "" && rest[0] != ',' && rest[0] != '\n' && rest[0] != ' ' && rest[0] != '\r' {
			return nil, fmt.Errorf("invalid text %q after a rule", rest)
		}
	}
	if len(rules) == 0 {
		return []PrincipalMappingRule{{Default: true}}, nil
	}
	return rules, nil
}

// MapPrincipal applies rules, in order, to a distinguished name (RFC 2253,
// "CN=alice,O=example") and returns the principal name of the first that
// matches.
func MapPrincipal(rules []PrincipalMappingRule, dn string) (string, error) {
	for _, r := range rules {
		if r.Default {
			return dn, nil
		}
		if !r.Pattern.MatchString(dn) {
			continue
		}
		out := r.Pattern.ReplaceAllString(dn, r.Replacement)
		switch r.Case {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w %q", ErrNoMatchingRule, dn)
}
