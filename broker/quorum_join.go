package broker

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/samsa-broker/samsa/config"
)

// joiningController reports whether this node is a controller that joins
// an existing quorum (KIP-853): controller.quorum.voters is unset and
// controller.quorum.bootstrap.servers names a controller listener other
// than its own. It starts Raft without bootstrapping a quorum and waits
// (up to quorumStartTimeout) until the active controller adds it
// (kafka-metadata-quorum add-controller, AddRaftVoter); it keeps its place
// in the voter set across restarts through Raft's configuration.
func joiningController(cfg *config.Config) bool {
	if !cfg.HasRole("controller") || len(cfg.QuorumVoters) > 0 {
		return false
	}
	for _, s := range cfg.QuorumBootstrapServers {
		if !isOwnControllerAddr(cfg, s) {
			return true
		}
	}
	return false
}

// controllerAdvertised is the host:port other controllers reach this
// node's controller listener at: its advertised.listeners entry, else its
// listeners entry (an empty host is the machine's name).
func controllerAdvertised(cfg *config.Config) (string, error) {
	for _, ls := range [][]config.Listener{cfg.AdvertisedListeners, cfg.Listeners} {
		for _, l := range ls {
			if !isControllerListener(cfg, l.Name) || l.Port <= 0 {
				continue
			}
			host := l.Host
			if host == "" || host == "0.0.0.0" || host == "::" {
				h, err := os.Hostname()
				if err != nil {
					return "", fmt.Errorf("controller listener %s: %w", l.Name, err)
				}
				host = h
			}
			return net.JoinHostPort(host, strconv.Itoa(l.Port)), nil
		}
	}
	return "", fmt.Errorf("controller.quorum.bootstrap.servers without controller.quorum.voters: node %d needs a controller listener (%v) with a port in listeners to join the quorum", cfg.NodeID, cfg.ControllerListenerNames)
}
