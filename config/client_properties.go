package config

import "fmt"

// ParseClientProperties reads a Kafka client properties file (what the
// Kafka tools take as --command-config: security.protocol, sasl.*, ssl.*)
// into a map; a key given twice keeps its last value, as Java's Properties.
func ParseClientProperties(text string) (map[string]string, error) {
	props, err := parseProperties(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	out := make(map[string]string, len(props))
	for _, p := range props {
		out[p.Key] = p.Value
	}
	return out, nil
}
