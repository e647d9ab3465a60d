package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners, such as
// PLAINTEXT://localhost:9092. Name is upper-cased like Kafka's ListenerName.
// An empty Host binds all interfaces; in an advertised listener it means the
// broker should advertise its canonical host name (config does no lookups).
type Listener struct {
	Name string
	Host string
	Port int
}

// String formats l as NAME://host:port, bracketing IPv6 hosts.
func (l Listener) String() string {
	return l.Name + "://" + net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// Addr returns host:port for net.Listen.
func (l Listener) Addr() string {
	return net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
}

// ParseListener parses NAME://host:port. The host may be empty, a name, an
// IPv4 address or a bracketed IPv6 address.
func ParseListener(s string) (Listener, error) {
	s = strings.TrimSpace(s)
	name, rest, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return Listener{}, fmt.Errorf("listener %q: want NAME://host:port", s)
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return Listener{}, fmt.Errorf("listener %q: bad character %q in name", s, r)
		}
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return Listener{}, fmt.Errorf("listener %q: missing port", s)
	}
	host, portStr := rest[:i], rest[i+1:]
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return Listener{}, fmt.Errorf("listener %q: unclosed [ in host", s)
		}
		host = host[1 : len(host)-1]
	} else if strings.ContainsAny(host, "[]/ ") {
		return Listener{}, fmt.Errorf("listener %q: bad host", s)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return Listener{}, fmt.Errorf("listener %q: port is not a number", s)
	}
	if port < 0 || port > 65535 {
		return Listener{}, fmt.Errorf("listener %q: port must be between 0 and 65535", s)
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: port}, nil
}

// parseListeners parses a comma-separated listener list and rejects
// duplicate names.
func parseListeners(s string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, item := range parseList(s) {
		l, err := ParseListener(item)
		if err != nil {
			return nil, err
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("listener name %s is used twice", l.Name)
		}
		seen[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

func validateListenerList(s string) error {
	_, err := parseListeners(s)
	return err
}

// securityProtocols are Kafka's security protocol names.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// parseProtocolMap parses NAME:PROTOCOL,... into a map keyed by the
// upper-cased listener name.
func parseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, item := range parseList(s) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("entry %q: want LISTENER_NAME:PROTOCOL", item)
		}
		known := false
		for _, p := range securityProtocols {
			known = known || p == proto
		}
		if !known {
			return nil, fmt.Errorf("entry %q: unknown security protocol %s (want one of %s)", item, proto, strings.Join(securityProtocols, ", "))
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener name %s is mapped twice", name)
		}
		m[name] = proto
	}
	if len(m) == 0 {
		return nil, errors.New("empty map")
	}
	return m, nil
}

func validateProtocolMap(s string) error {
	_, err := parseProtocolMap(s)
	return err
}

// deriveListeners is listeners when only advertised.listeners is given, as
// the apache/kafka image's configure script derives KAFKA_LISTENERS from
// KAFKA_ADVERTISED_LISTENERS: the same names and ports on all interfaces
// (the script writes 0.0.0.0; an empty host here binds IPv6 too). The
// script stops there, so a combined-mode compose file that advertises only
// client listeners has no controller listener and Kafka refuses to start;
// samsa adds it from this node's controller.quorum.voters entry, on the
// first controller.listener.names name, when the node is a controller.
func deriveListeners(c *Config, advertised []Listener) []Listener {
	out := make([]Listener, 0, len(advertised)+1)
	hasController := false
	for _, l := range advertised {
		out = append(out, Listener{Name: l.Name, Port: l.Port})
		hasController = hasController || contains(c.ControllerListenerNames, l.Name)
	}
	if hasController || !c.HasRole("controller") || len(c.ControllerListenerNames) == 0 {
		return out
	}
	for _, v := range c.QuorumVoters {
		if v.ID == c.NodeID {
			out = append(out, Listener{Name: c.ControllerListenerNames[0], Port: v.Port})
			break
		}
	}
	return out
}

// joinListeners formats ls as a listeners setting value.
func joinListeners(ls []Listener) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ",")
}

// ParseListeners parses a listeners value (NAME://host:port,...; names
// upper-cased, each name once).
func ParseListeners(s string) ([]Listener, error) { return parseListeners(s) }

// ParseProtocolMap parses a listener.security.protocol.map value into a
// map keyed by the upper-cased listener name.
func ParseProtocolMap(s string) (map[string]string, error) { return parseProtocolMap(s) }
