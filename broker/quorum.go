package broker

import (
	"context"
	"fmt"
	"io"
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

// quorumOf checks the KRaft settings and returns this node's voter entry
// and the voters (none for a broker-only node configured with
// controller.quorum.bootstrap.servers alone). A controller whose controller.quorum.bootstrap.servers
// names other nodes, without controller.quorum.voters, joins their quorum
// (joiningController): it never bootstraps one of its own, and its entry
// is its advertised controller listener.
func quorumOf(cfg *config.Config) (quorum.Voter, []quorum.Voter, error) {
	if !cfg.HasRole("controller") {
		if len(cfg.QuorumVoters) == 0 && len(cfg.QuorumBootstrapServers) == 0 {
			return quorum.Voter{}, nil, fmt.Errorf("process.roles=%v: a broker-only node needs controller.quorum.voters or controller.quorum.bootstrap.servers", cfg.ProcessRoles)
		}
		for _, v := range cfg.QuorumVoters {
			if v.ID == cfg.NodeID {
				return quorum.Voter{}, nil, fmt.Errorf("process.roles=%v: node %d is in controller.quorum.voters but does not have the controller role", cfg.ProcessRoles, cfg.NodeID)
			}
		}
	}
	self := quorum.Voter{ID: cfg.NodeID, Addr: "node-" + strconv.Itoa(int(cfg.NodeID))}
	var voters []quorum.Voter
	for _, v := range cfg.QuorumVoters {
		voters = append(voters, quorum.Voter{ID: v.ID, Addr: v.Addr()})
		if v.ID == cfg.NodeID {
			self.Addr = v.Addr()
		}
	}
	if cfg.HasRole("controller") && len(cfg.QuorumVoters) == 0 {
		// A dynamic quorum's voters are reached at their advertised
		// controller listener: a joining controller's entry, and that
		// of a lone controller-only voter (bootstrap servers naming
		// only itself) whose brokers and joining controllers dial it.
		addr, err := controllerAdvertised(cfg)
		switch {
		case err == nil:
			self.Addr = addr
		case joiningController(cfg):
			return quorum.Voter{}, nil, err
		}
	}
	if len(voters) == 0 && cfg.HasRole("controller") {
		voters = []quorum.Voter{self}
	}
	// A broker-only node with bootstrap servers alone knows no voter
	// (nil): it finds the active controller through them (leaderOf).
	return self, voters, nil
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

// singleVoterElectionTimeout is the Raft election timeout of a quorum of
// one voter, whose leader has no followers to heartbeat; the leader lease
// check runs every half of it.
const singleVoterElectionTimeout = 15 * time.Millisecond

// openQuorum starts this node's metadata quorum in metaDir/raft. A quorum
// of one voter that is also a broker (a single node) runs Raft over an
// in-memory transport (no port is opened);
// it waits until the node is its active controller and imports the
// metadata.log of earlier builds on first start. Several voters run Raft
// on the controller listener, whose other connections (Kafka requests to
// the controller) go to kafka; it waits until the quorum has a leader and
// this node applied what is committed. So does a lone controller-only
// voter: its brokers are other processes (one controller and broker-only
// nodes, as Kafka allows), which reach it there.
func openQuorum(cfg *config.Config, clusterID, metaDir string, kafka func(net.Conn), sec quorum.Security, logger *slog.Logger) (*quorum.Quorum, io.Closer, net.Addr, error) {
	self, voters, err := quorumOf(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	opts := quorum.Options{
		NodeID:          cfg.NodeID,
		ClusterID:       clusterID,
		Dir:             filepath.Join(metaDir, "raft"),
		Voters:          voters,
		Observer:        joiningController(cfg), // quorum_join.go
		ElectionTimeout: time.Duration(cfg.QuorumElectionTimeoutMs) * time.Millisecond,
		Logger:          logger,
	}
	if len(voters) == 1 && cfg.HasRole("broker") && !opts.Observer {
		// No peer can ever connect to a lone voter, so its election timer
		// only delays start-up (Raft waits one to two timeouts before the
		// first election): keep it short.
		opts.ElectionTimeout = min(opts.ElectionTimeout, singleVoterElectionTimeout)
		_, trans := raft.NewInmemTransport(raft.ServerAddress(self.Addr))
		opts.Transport = trans
		q, err := quorum.Open(opts)
		if err != nil {
			trans.Close()
			return nil, nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), startupLeaderTimeout)
		defer cancel()
		if err := q.WaitLeading(ctx); err == nil {
			err = quorum.ImportFileLog(ctx, q, filepath.Join(metaDir, "metadata.log"))
		}
		if err != nil {
			q.Close()
			trans.Close()
			return nil, nil, nil, err
		}
		return q, trans, nil, nil
	}
	bind, err := controllerBind(cfg, self)
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := quorum.ListenSecure(bind, self.Addr, kafka, logger, sec)
	if err != nil {
		return nil, nil, nil, err
	}
	opts.Listener = ln
	q, err := quorum.Open(opts) // owns ln from here on, also on error
	if err != nil {
		return nil, nil, nil, err
	}
	logger.Info("quorum: waiting for a leader", "voters", voters, "controller_listener", ln.BoundAddr().String())
	ctx, cancel := context.WithTimeout(context.Background(), quorumStartTimeout)
	defer cancel()
	if err := q.WaitReady(ctx); err != nil {
		q.Close()
		return nil, nil, nil, err
	}
	return q, nopCloser{}, ln.BoundAddr(), nil
}

// openObserver starts the metadata log of a broker-only node: a Raft
// member that does not vote. Its listener (bind) is the one clients and
// other brokers reach it on, and it accepts no Raft there: the node parks
// reverse connections at the voters' controller listeners (static voters,
// controller.quorum.bootstrap.servers and the voters of the Raft
// configuration it follows), which the active controller's Raft uses to
// reach it at its registered address (advertise). The active controller
// adds it when it registers; until then it has no leader, so it does not
// wait here.
//
// discovered returns the active controller a node configured with
// controller.quorum.bootstrap.servers alone learned from them
// (bootstrap_join.go; "" for none): until the node has applied a Raft
// configuration, it parks there too, so that an active controller that is
// not among the bootstrap servers reaches it.
func openObserver(cfg *config.Config, clusterID, metaDir, bind, advertise string, kafka func(net.Conn), sec quorum.Security, logger *slog.Logger, discovered func() string) (*quorum.Quorum, *quorum.Listener, error) {
	_, voters, err := quorumOf(cfg)
	if err != nil {
		return nil, nil, err
	}
	ln, err := quorum.ListenBrokerSecure(bind, advertise, kafka, logger, sec)
	if err != nil {
		return nil, nil, err
	}
	q, err := quorum.Open(quorum.Options{
		NodeID:          cfg.NodeID,
		ClusterID:       clusterID,
		Dir:             filepath.Join(metaDir, "raft"),
		Voters:          voters,
		Observer:        true,
		Listener:        ln,
		ElectionTimeout: time.Duration(cfg.QuorumElectionTimeoutMs) * time.Millisecond,
		Logger:          logger,
	})
	if err != nil {
		return nil, nil, err
	}
	ln.StartReverse(advertise, func() []string { return observerTargets(cfg, q, discovered) })
	return q, ln, nil
}

// observerTargets are the controller listeners a broker-only node parks
// reverse Raft connections at: the voters of the Raft configuration it
// follows, the static voters and controller.quorum.bootstrap.servers (the
// same controller under two names gets connections under each), and,
// while it has applied no Raft configuration, the active controller it
// learned from the bootstrap servers (discovered, may be nil).
func observerTargets(cfg *config.Config, q *quorum.Quorum, discovered func() string) []string {
	var out []string
	for _, v := range cfg.QuorumVoters {
		out = append(out, v.Addr())
	}
	out = append(out, cfg.QuorumBootstrapServers...)
	voters := 0
	if members, votes, err := q.Members(); err == nil {
		for id, m := range members {
			if votes[id] {
				out = append(out, m.Addr)
				voters++
			}
		}
	}
	if voters == 0 && discovered != nil {
		if addr := discovered(); addr != "" {
			out = append(out, addr)
		}
	}
	return out
}

// quorumStartTimeout bounds how long a node of a multi-voter quorum waits at
// start for a majority of the voters (the other nodes may start later).
const quorumStartTimeout = 5 * time.Minute

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// controllerBind is the address to bind the controller listener on: the
// listener named in controller.listener.names, or, without one in
// listeners, the port of this node's voter entry on all interfaces.
func controllerBind(cfg *config.Config, self quorum.Voter) (string, error) {
	for _, l := range cfg.Listeners {
		if isControllerListener(cfg, l.Name) {
			return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)), nil
		}
	}
	_, port, err := net.SplitHostPort(self.Addr)
	if err != nil {
		return "", fmt.Errorf("controller.quorum.voters entry of node %d: %w", cfg.NodeID, err)
	}
	return net.JoinHostPort("", port), nil
}
