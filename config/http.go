package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// parseHTTPListener parses samsa.http.listener: host:port, optionally with
// an http:// scheme, and returns host:port for net.Listen ("" when the
// setting is empty, which turns the HTTP listener off). An empty host binds
// every interface; port 0 picks a free port (tests).
func parseHTTPListener(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if !strings.EqualFold(scheme, "http") {
			return "", fmt.Errorf("scheme %q: only http is supported", scheme)
		}
		s = rest
	}
	host, portText, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%q: want host:port", s)
	}
	if strings.ContainsAny(host, "/ ") {
		return "", fmt.Errorf("%q: bad host", s)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", fmt.Errorf("%q: port must be between 0 and 65535", s)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

func validateHTTPListener(s string) error {
	_, err := parseHTTPListener(s)
	return err
}
