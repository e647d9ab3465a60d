package config

import (
	"fmt"
	"strconv"
	"strings"
)

// property is one key=value pair of a properties file with its line number.
type property struct {
	Key, Value string
	Line       int
}

// parseProperties reads Java .properties syntax, as Kafka's server.properties
// uses: '#' and '!' comment lines, "key=value", "key: value" and
// "key value", a trailing odd backslash continuing the logical line, and the
// escapes \t \n \r \f \uXXXX (any other escaped character stands for itself).
func parseProperties(text string) ([]property, error) {
	var out []property
	text = strings.TrimPrefix(text, "\ufeff") // a UTF-8 byte order mark from Windows editors
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines; each continuation drops its leading blanks.
		for continued(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continued(line) {
			line = line[:len(line)-1]
		}
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out = append(out, property{Key: k, Value: v, Line: start})
	}
	return out, nil
}

// continued reports whether line ends in an odd number of backslashes.
func continued(line string) bool {
	n := 0
	for j := len(line) - 1; j >= 0 && line[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// blank, then skips blanks and at most one '=' or ':' before the value.
func splitProperty(line string) (key, value string) {
	end := len(line)
	for j := 0; j < len(line); j++ {
		c := line[j]
		if c == '\\' {
			j++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = j
			break
		}
	}
	key, rest := line[:end], line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c != '\\' || j+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		j++
		switch s[j] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if j+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape")
			}
			n, err := strconv.ParseUint(s[j+1:j+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape")
			}
			b.WriteRune(rune(n))
			j += 4
		default:
			b.WriteByte(s[j])
		}
	}
	return b.String(), nil
}
