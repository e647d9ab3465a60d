package config

import (
	"strings"
	"testing"
)

// FuzzParseProperties checks that the properties parser never panics and
// that a key=value line it returns survives being written back escaped.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"a=b\n", "# c\n! d\nk : v\n", "k v\\\n  w\n", "k\\=x=\\u0041\\t\n", "x=\\", "\\u12", "a=b\r\nc=d\r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		props, err := parseProperties(text)
		if err != nil {
			return
		}
		for _, p := range props {
			if p.Line < 1 {
				t.Fatalf("line %d", p.Line)
			}
			again, err := parseProperties(escapeProperty(p.Key, true) + "=" + escapeProperty(p.Value, false) + "\n")
			if err != nil || len(again) != 1 || again[0].Key != p.Key || again[0].Value != p.Value {
				t.Fatalf("round trip of %q=%q: %+v, %v", p.Key, p.Value, again, err)
			}
		}
	})
}

// escapeProperty writes s so that parseProperties reads it back unchanged.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		r := s[i]
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteByte('\\')
			b.WriteByte(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		default:
			b.WriteByte(r)
		}
	}
	return b.String()
}

// FuzzParseListener checks that listener parsing never panics and that a
// parsed listener formats and parses back to itself.
func FuzzParseListener(f *testing.F) {
	for _, s := range []string{"PLAINTEXT://localhost:9092", "CONTROLLER://:9093", "SSL://[::1]:9094", "x://a:-1", "://:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseListener(s)
		if err != nil {
			return
		}
		back, err := ParseListener(l.String())
		if err != nil || back != l {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, l, l.String(), back, err)
		}
	})
}
