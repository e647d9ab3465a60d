package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is the Kafka type of a setting. The numeric values are the ConfigType
// codes of DescribeConfigs v3+ (BOOLEAN=1 ... PASSWORD=9), so a handler can put
// them on the wire directly with int8(t).
type Type int8

// Types of settings, numbered like Kafka's DescribeConfigs ConfigType.
const (
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

// String returns Kafka's upper-case name of the type.
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Short:
		return "SHORT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Class:
		return "CLASS"
	case Password:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Source tells where an effective value came from. The numeric values are the
// ConfigSource codes of DescribeConfigs v1+, so int8(s) can go on the wire.
type Source int8

// Sources of a value, numbered like Kafka's DescribeConfigs ConfigSource.
const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1 // a topic override
	SourceDynamicBroker        Source = 2 // per-broker dynamic config (AlterConfigs)
	SourceDynamicDefaultBroker Source = 3 // cluster-wide dynamic broker default
	SourceStatic               Source = 4 // server.properties, environment or flag
	SourceDefault              Source = 5 // built-in default
)

// String returns Kafka's name of the source.
func (s Source) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStatic:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	ErrInvalidValue = errors.New("config: invalid value")
	ErrInvalid      = errors.New("config: invalid configuration")
	ErrUnsupported  = errors.New("config: not supported yet")
	ErrHelp         = errors.New("config: help requested")
	ErrUsage        = errors.New("config: bad command line")
)

// parseBool parses like Kafka's ConfigDef BOOLEAN: "true"/"false", any case,
// surrounding blanks ignored.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("expected true or false")
}

func parseInt(s string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("out of range for a %d-bit integer", bits)
		}
		return 0, errors.New("not an integer")
	}
	return n, nil
}

func parseDouble(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) {
		return 0, errors.New("not a number")
	}
	return f, nil
}

// parseList splits a comma-separated list like Kafka: items are trimmed, and a
// blank string is the empty list.
func parseList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkType reports whether s parses as a value of type t.
func checkType(t Type, s string) error {
	var err error
	switch t {
	case Boolean:
		_, err = parseBool(s)
	case Int:
		_, err = parseInt(s, 32)
	case Short:
		_, err = parseInt(s, 16)
	case Long:
		_, err = parseInt(s, 64)
	case Double:
		_, err = parseDouble(s)
	}
	return err
}

// validator checks a raw value; it must also check the type.
type validator func(string) error

func typeOnly(t Type) validator {
	return func(s string) error { return checkType(t, s) }
}

// intRange accepts an integer of the given width in [lo, hi].
func intRange(t Type, lo, hi int64) validator {
	bits := 64
	switch t {
	case Int:
		bits = 32
	case Short:
		bits = 16
	}
	return func(s string) error {
		n, err := parseInt(s, bits)
		if err != nil {
			return err
		}
		if n < lo || n > hi {
			return rangeError(lo, hi)
		}
		return nil
	}
}

func rangeError(lo, hi int64) error {
	switch {
	case hi == math.MaxInt64 || hi == math.MaxInt32 || hi == math.MaxInt16:
		return fmt.Errorf("value must be at least %d", lo)
	case lo == math.MinInt64 || lo == math.MinInt32 || lo == math.MinInt16:
		return fmt.Errorf("value must be no more than %d", hi)
	}
	return fmt.Errorf("value must be between %d and %d", lo, hi)
}

func atLeast(t Type, lo int64) validator {
	hi := int64(math.MaxInt64)
	switch t {
	case Int:
		hi = math.MaxInt32
	case Short:
		hi = math.MaxInt16
	}
	return intRange(t, lo, hi)
}

func doubleRange(lo, hi float64) validator {
	return func(s string) error {
		f, err := parseDouble(s)
		if err != nil {
			return err
		}
		if f < lo || f > hi {
			return fmt.Errorf("value must be between %g and %g", lo, hi)
		}
		return nil
	}
}

// oneOf accepts exactly one of the given strings (case-sensitive, like
// Kafka's ValidString).
func oneOf(allowed ...string) validator {
	return func(s string) error {
		s = strings.TrimSpace(s)
		for _, a := range allowed {
			if s == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// oneOfFold is oneOf ignoring case, as Kafka's enum settings that say
// "(case insensitive)".
func oneOfFold(allowed ...string) validator {
	return func(s string) error {
		s = strings.TrimSpace(s)
		for _, a := range allowed {
			if strings.EqualFold(s, a) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// listOf accepts a non-empty list whose items are all in allowed.
func listOf(allowed ...string) validator {
	item := oneOf(allowed...)
	return func(s string) error {
		items := parseList(s)
		if len(items) == 0 {
			return fmt.Errorf("must be a non-empty list of %s", strings.Join(allowed, ", "))
		}
		for _, it := range items {
			if err := item(it); err != nil {
				return fmt.Errorf("item %q: %w", it, err)
			}
		}
		return nil
	}
}

// listOrEmptyOf accepts a list, the empty one included, whose items are all
// in allowed and appear once: Kafka 4.4's ConfigDef.ValidList.in(String...),
// which cleanup.policy and log.cleanup.policy use (an empty cleanup.policy
// means neither deletion nor compaction: segments are kept forever).
func listOrEmptyOf(allowed ...string) validator {
	item := oneOf(allowed...)
	return func(s string) error {
		seen := map[string]bool{}
		for _, it := range parseList(s) {
			if err := item(it); err != nil {
				return fmt.Errorf("item %q: %w", it, err)
			}
			if seen[it] {
				return fmt.Errorf("item %q: values must not be duplicated", it)
			}
			seen[it] = true
		}
		return nil
	}
}

// anyOf accepts a value that one of the validators accepts.
func anyOf(vs ...validator) validator {
	return func(s string) error {
		var first error
		for _, v := range vs {
			err := v(s)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		return first
	}
}

// distinctList accepts a list without duplicate items, like Kafka's
// ValidList.anyNonDuplicateValues; emptyOK allows the empty list.
func distinctList(emptyOK bool) validator {
	return func(s string) error {
		items := parseList(s)
		if len(items) == 0 && !emptyOK {
			return errors.New("must not be empty")
		}
		seen := map[string]bool{}
		for _, it := range items {
			if seen[it] {
				return fmt.Errorf("duplicate item %q", it)
			}
			seen[it] = true
		}
		return nil
	}
}
