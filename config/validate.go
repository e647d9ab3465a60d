package config

import (
	"fmt"
	"net"
)

// Validate checks settings against each other: advertised listeners must be
// declared in listeners, every listener must have a security protocol, controller
// listeners are PLAINTEXT, ports are in range, node.id is not negative, and
// session timeouts are ordered. Load calls it; call it again after changing a
// Config by hand.
func (c *Config) Validate() error {
	if c.NodeID < 0 {
		return fmt.Errorf("%w: node.id must be >= 0, got %d", ErrInvalid, c.NodeID)
	}
	if len(c.Listeners) == 0 {
		return fmt.Errorf("%w: listeners is empty", ErrInvalid)
	}
	names := map[string]bool{}
	ports := map[int]Listener{}
	for _, l := range c.Listeners {
		if err := c.checkListener("listeners", l); err != nil {
			return err
		}
		if names[l.Name] {
			return fmt.Errorf("%w: listeners: name %s is used twice", ErrInvalid, l.Name)
		}
		names[l.Name] = true
		// Like Kafka, two listeners may share a port only if one binds an
		// IPv4 address and the other an IPv6 address.
		if other, dup := ports[l.Port]; dup && l.Port != 0 && !ipv4AndIPv6(other.Host, l.Host) {
			return fmt.Errorf("%w: listeners %s and %s use the same port %d", ErrInvalid, other.Name, l.Name, l.Port)
		}
		ports[l.Port] = l
	}
	for _, l := range c.AdvertisedListeners {
		if !names[l.Name] {
			return fmt.Errorf("%w: advertised.listeners: listener %s is not in listeners", ErrInvalid, l.Name)
		}
		if err := c.checkListener("advertised.listeners", l); err != nil {
			return err
		}
		if l.Host == "0.0.0.0" || l.Host == "::" {
			return fmt.Errorf("%w: advertised.listeners: %s cannot advertise the meta-address %s", ErrInvalid, l.Name, l.Host)
		}
		if contains(c.ControllerListenerNames, l.Name) {
			return fmt.Errorf("%w: AdvertisedListeners: %s is a controller listener and must not be given to clients", ErrInvalid, l.Name)
		}
	}
	// As Kafka, only a broker needs its inter-broker listener: the
	// apache/kafka "isolated" compose example gives its controller-only
	// nodes KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT and a CONTROLLER
	// listener alone.
	if c.InterBrokerListenerName != "" && !names[c.InterBrokerListenerName] && contains(c.ProcessRoles, "broker") {
		return fmt.Errorf("%w: inter.broker.listener.name %s is not in listeners", ErrInvalid, c.InterBrokerListenerName)
	}
	for _, r := range c.ProcessRoles {
		if r != "broker" && r != "controller" {
			return fmt.Errorf("%w: process.roles: unknown role %q", ErrInvalid, r)
		}
	}
	if err := c.validateQuorum(); err != nil {
		return err
	}
	if len(c.LogDirs) == 0 {
		return fmt.Errorf("%w: no log directory", ErrInvalid)
	}
	if c.GroupMinSessionTimeoutMs > c.GroupMaxSessionTimeoutMs {
		return fmt.Errorf("%w: group.min.session.timeout.ms (%d) is above group.max.session.timeout.ms (%d)", ErrInvalid, c.GroupMinSessionTimeoutMs, c.GroupMaxSessionTimeoutMs)
	}
	return nil
}

func (c *Config) checkListener(setting string, l Listener) error {
	if l.Port < 0 || l.Port > 65535 {
		return fmt.Errorf("%w: %s: %s port %d is not between 0 and 65535", ErrInvalid, setting, l.Name, l.Port)
	}
	// Any protocol, also for a controller listener, whose Raft
	// connections then go through it too (docs/OPERATIONS.md "Controller
	// listener").
	if _, ok := c.ListenerSecurityProtocolMap[l.Name]; !ok {
		return fmt.Errorf("%w: %s: listener %s has no entry in listener.security.protocol.map", ErrInvalid, setting, l.Name)
	}
	return nil
}

// ipv4AndIPv6 reports whether one host is an IPv4 literal and the other an
// IPv6 literal.
func ipv4AndIPv6(a, b string) bool {
	ipA, ipB := net.ParseIP(a), net.ParseIP(b)
	if ipA == nil || ipB == nil {
		return false
	}
	return (ipA.To4() == nil) != (ipB.To4() == nil)
}
