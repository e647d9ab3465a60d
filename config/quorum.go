package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// QuorumVoter is one entry of controller.quorum.voters: id@host:port, the
// node id of a controller and the address of its controller listener.
type QuorumVoter struct {
	ID   int32
	Host string
	Port int
}

// Addr is host:port.
func (v QuorumVoter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

// parseVoters parses controller.quorum.voters (id@host:port,...); ids must
// be distinct, as Kafka requires.
func parseVoters(s string) ([]QuorumVoter, error) {
	var voters []QuorumVoter
	seen := map[int32]bool{}
	for _, item := range parseList(s) {
		idText, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("%q is not id@host:port", item)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q: node id %q is not a non-negative integer", item, idText)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil || port <= 0 || port > 65535 || host == "" {
			return nil, fmt.Errorf("%q: bad host or port", item)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("node id %d appears twice", id)
		}
		seen[int32(id)] = true
		voters = append(voters, QuorumVoter{ID: int32(id), Host: host, Port: port})
	}
	return voters, nil
}

func validateVoters(s string) error {
	_, err := parseVoters(s)
	return err
}

// HasRole reports whether process.roles includes role.
func (c *Config) HasRole(role string) bool { return contains(c.ProcessRoles, role) }

// validateQuorum checks the KRaft settings against each other as Kafka
// does: a controller must be among the voters it is given.
func (c *Config) validateQuorum() error {
	if len(c.QuorumVoters) == 0 || !c.HasRole("controller") {
		return nil
	}
	for _, v := range c.QuorumVoters {
		if v.ID == c.NodeID {
			return nil
		}
	}
	return fmt.Errorf("%w: process.roles includes controller, so node.id %d must be in controller.quorum.voters", ErrInvalid, c.NodeID)
}
