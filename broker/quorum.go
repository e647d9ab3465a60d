package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller/quorum"
)

// startupLeaderTimeout bounds how long a node waits at start to become the
// active controller of its quorum of one.
const startupLeaderTimeout = 30 * time.Second

// quorumOf checks the KRaft settings and returns this node's voter entry.
// This build runs one node as a quorum of one voter; a voter list or
// bootstrap servers naming other nodes are refused, never ignored: starting
// anyway would form a separate one-node cluster per process.
func quorumOf(cfg *config.Config) (quorum.Voter, error) {
	if !cfg.HasRole("broker") || !cfg.HasRole("controller") {
		return quorum.Voter{}, fmt.Errorf("process.roles=%v: only combined mode (broker,controller) is supported yet; separate controller and broker processes are not", cfg.ProcessRoles)
	}
	self := quorum.Voter{ID: cfg.NodeID, Addr: "node-" + strconv.Itoa(int(cfg.NodeID))}
	var others []int32
	for _, v := range cfg.QuorumVoters {
		if v.ID == cfg.NodeID {
			self.Addr = v.Addr()
		} else {
			others = append(others, v.ID)
		}
	}
	if len(others) > 0 {
		return quorum.Voter{}, fmt.Errorf("controller.quorum.voters names other nodes %v: multi-node clusters are not supported by this build yet; refusing to start instead of forming a separate one-node cluster", others)
	}
	if len(cfg.QuorumVoters) == 0 {
		for _, s := range cfg.QuorumBootstrapServers {
			if !isOwnControllerAddr(cfg, s) {
				return quorum.Voter{}, fmt.Errorf("controller.quorum.bootstrap.servers names %s, which is not this node's controller listener: multi-node clusters are not supported by this build yet; refusing to start instead of forming a separate one-node cluster", s)
			}
		}
	}
	return self, nil
}

// isOwnControllerAddr reports whether host:port is one of this node's
// controller listeners: same port, and a host that is empty, loopback,
// this machine's name or the listener's own host.
func isOwnControllerAddr(cfg *config.Config, addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	hostname, _ := os.Hostname()
	for _, l := range cfg.Listeners {
		if !isControllerListener(cfg, l.Name) || strconv.Itoa(l.Port) != port {
			continue
		}
		ip := net.ParseIP(host)
		if host == "" || host == "localhost" || host == l.Host || host == hostname || ip != nil && ip.IsLoopback() {
			return true
		}
	}
	return false
}

// openQuorum starts this node's metadata quorum (one voter, so Raft runs
// over an in-memory transport and no port is opened) in
// metaDir/raft, waits until the node is its active controller, and imports
// the metadata.log of earlier builds on first start.
func openQuorum(cfg *config.Config, clusterID, metaDir string, logger *slog.Logger) (*quorum.Quorum, *raft.InmemTransport, error) {
	self, err := quorumOf(cfg)
	if err != nil {
		return nil, nil, err
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(self.Addr))
	q, err := quorum.Open(quorum.Options{
		NodeID:          cfg.NodeID,
		ClusterID:       clusterID,
		Dir:             filepath.Join(metaDir, "raft"),
		Voters:          []quorum.Voter{self},
		Transport:       trans,
		ElectionTimeout: time.Duration(cfg.QuorumElectionTimeoutMs) * time.Millisecond,
		Logger:          logger,
	})
	if err != nil {
		trans.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startupLeaderTimeout)
	defer cancel()
	if err := q.WaitLeading(ctx); err == nil {
		err = quorum.ImportFileLog(ctx, q, filepath.Join(metaDir, "metadata.log"))
	}
	if err != nil {
		q.Close()
		trans.Close()
		return nil, nil, err
	}
	return q, trans, nil
}
