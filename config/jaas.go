package config

import (
	"fmt"
	"strings"
	"unicode"
)

// JAASEntry is one login module of a JAAS configuration, as Kafka reads a
// sasl.jaas.config value:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret" user_alice="alice-secret";
//
// Module is the class name, Flag the control flag (required, requisite,
// sufficient, optional) and Options the key=value pairs, unquoted.
type JAASEntry struct {
	Module  string
	Flag    string
	Options map[string]string
}

// Kafka's login modules, by class name.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// ParseJAAS parses a sasl.jaas.config value: one or more login modules,
// each "Class flag key=value ... ;". Values may be bare words or double
// quoted strings with backslash escapes, as Java's ConfigFile parser allows.
// The final ';' may be missing, which Kafka refuses; samsa accepts it.
func ParseJAAS(s string) ([]JAASEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return nil, err
	}
	var out []JAASEntry
	for i := 0; i < len(toks); {
		if toks[i].quoted || toks[i].text == ";" || toks[i].text == "=" {
			return nil, fmt.Errorf("jaas: expected a login module class name, got %q", toks[i].text)
		}
		e := JAASEntry{Module: toks[i].text, Options: map[string]string{}}
		i++
		if i >= len(toks) || toks[i].quoted || toks[i].text == ";" {
			return nil, fmt.Errorf("jaas: %s: missing control flag (required, requisite, sufficient or optional)", e.Module)
		}
		e.Flag = strings.ToLower(toks[i].text)
		switch e.Flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return nil, fmt.Errorf("jaas: %s: bad control flag %q", e.Module, toks[i].text)
		}
		i++
		for i < len(toks) && !(toks[i].text == ";" && !toks[i].quoted) {
			if i+2 >= len(toks) || toks[i+1].text != "=" || toks[i+1].quoted || (toks[i+2].text == ";" && !toks[i+2].quoted) {
				return nil, fmt.Errorf("jaas: %s: option %q has no value", e.Module, toks[i].text)
			}
			e.Options[toks[i].text] = toks[i+2].text
			i += 3
		}
		i++ // the ';'
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("jaas: no login module")
	}
	return out, nil
}

type jaasToken struct {
	text   string
	quoted bool
}

func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	r := []rune(s)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == ';' || c == '=':
			toks = append(toks, jaasToken{text: string(c)})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(r) && r[j] != c; j++ {
				if r[j] == '\\' && j+1 < len(r) {
					j++
				}
				b.WriteRune(r[j])
			}
			if j >= len(r) {
				return nil, fmt.Errorf("jaas: unterminated quoted string")
			}
			toks = append(toks, jaasToken{text: b.String(), quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(r) && !unicode.IsSpace(r[j]) && r[j] != ';' && r[j] != '=' && r[j] != '"' {
				j++
			}
			toks = append(toks, jaasToken{text: string(r[i:j])})
			i = j
		}
	}
	return toks, nil
}
