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
	return jaasEntries(toks)
}

// ParseJAASFile parses a JAAS login configuration file, as given to Kafka
// with -Djava.security.auth.login.config in KAFKA_OPTS: sections
// "Name { entries };", returned by name. A broker reads the section
// "<listener>.KafkaServer" (listener name in lower case), else
// "KafkaServer". A section may have no login module, as Java allows.
func ParseJAASFile(s string) (map[string][]JAASEntry, error) {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "//") || strings.HasPrefix(t, "#") {
			continue
		}
		lines = append(lines, l)
	}
	toks, err := jaasTokens(strings.Join(lines, "\n"))
	if err != nil {
		return nil, err
	}
	out := map[string][]JAASEntry{}
	for i := 0; i < len(toks); {
		if toks[i].quoted || i+1 >= len(toks) || toks[i+1].text != "{" {
			return nil, fmt.Errorf("jaas: expected a section \"Name {\" at %q", toks[i].text)
		}
		name := toks[i].text
		j := i + 2
		for j < len(toks) && !(toks[j].text == "}" && !toks[j].quoted) {
			j++
		}
		if j >= len(toks) {
			return nil, fmt.Errorf("jaas: section %s is not closed with }", name)
		}
		// An empty section ("Client {};", left from ZooKeeper set-ups) is
		// valid in Java's ConfigFile parser, and Kafka starts with it.
		var entries []JAASEntry
		if j > i+2 {
			if entries, err = jaasEntries(toks[i+2 : j]); err != nil {
				return nil, fmt.Errorf("section %s: %w", name, err)
			}
		}
		out[name] = entries
		i = j + 1
		if i < len(toks) && toks[i].text == ";" && !toks[i].quoted {
			i++
		}
	}
	return out, nil
}

// jaasEntries parses the login modules of a configuration.
func jaasEntries(toks []jaasToken) ([]JAASEntry, error) {
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
		case c == ';' || c == '=' || c == '{' || c == '}':
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
			for j < len(r) && !unicode.IsSpace(r[j]) && !strings.ContainsRune(";={}\"", r[j]) {
				j++
			}
			toks = append(toks, jaasToken{text: string(r[i:j])})
			i = j
		}
	}
	return toks, nil
}
