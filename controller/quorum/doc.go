// Package quorum puts the controller's metadata log on hashicorp/raft.
//
// Every voter (a node with the controller role, listed in
// controller.quorum.voters) runs one Quorum. A controller.Controller
// decides changes with the pure functions of package controller and
// proposes them as one Raft entry per batch (Propose); once Raft commits the
// entry, every voter's FSM applies it to its controller.Machine, which
// queues the change, and each Controller publishes it (OnChange, then
// Image). The FSM's apply step only decodes and applies records: every
// file or network effect of a change is done by whoever reconciles against
// the published image. A single node is a quorum of one voter and runs the
// same code.
//
// Only the active controller (the Raft leader, once a Barrier showed that
// its Machine applied every entry of earlier terms) accepts proposals;
// elsewhere Propose returns controller.ErrNotController, which the
// controller answers as Kafka's NOT_CONTROLLER. An entry carries the
// offset of the image it was decided against, so a decision that raced a
// leader change is skipped alike by every replica (controller.ErrStale)
// instead of applying to an image it was not made for.
//
// # Usage
//
//	ln, err := quorum.Listen(":9093", "node1:9093", nil, logger)
//	q, err := quorum.Open(quorum.Options{NodeID: 1, ClusterID: id, Dir: dir,
//		Voters: []quorum.Voter{{1, "node1:9093"}, {2, "node2:9093"}, {3, "node3:9093"}},
//		Listener: ln, Logger: logger})
//	c, err := controller.New(controller.Options{NodeID: 1, ClusterID: id,
//		Quorum: q, Machine: q.Machine(), OnChange: reconcile})
//	...
//	c.Close(); q.Close()
//
// # Files
//
// Dir/raft.db is raft-boltdb's log and stable store (entries, current term,
// vote). Dir/snapshots/ is raft's file snapshot store; each snapshot's
// state.bin is controller.WriteSnapshot's format ("SAMSAMSS", version 1;
// see package controller for its migration rules), and meta.json is
// raft's. A Raft entry is controller.EncodeEntry's format (version byte 1,
// base offset, record count, record frames).
//
// A raft.db that fails the page check at Open (checkStore), or a
// snapshot store none of whose snapshots can be read (checkSnapshots), is
// damaged. A lone voter then refuses to start (ErrCorrupt): it has nobody
// to fetch the metadata from, and starting afresh would form a new, empty
// cluster. Any other node (a voter with other voters, a joining
// controller, a broker-only observer) renames Dir to Dir.damaged-<unix
// ms>, kept for inspection, and starts afresh with the marker file
// Dir/rejoining (rejoin.go): while it exists the node never bootstraps a
// quorum, refuses every vote and leadership transfer, and never starts an
// election of its own, where it would vote for itself (it forgot its term
// and vote, and must not vote twice in one term; its Raft election timer
// is held until then); the leader sends it the log or a snapshot, and
// once it has applied the commit index, with a leader and two election
// timeouts after its start, the marker goes and it votes again.
//
// # Voter changes (KIP-853)
//
// AddVoter and RemoveVoter change the Raft configuration (voters.go).
// A joining controller (started with controller.quorum.bootstrap.servers
// and no voter list, Observer) runs Raft without bootstrapping; AddVoter
// adds it as a non-voter, waits until it has caught up with the commit
// index, then makes it a voter. RemoveVoter demotes a voter to a
// non-voting member, which keeps receiving the log (an observer, as a
// removed Kafka controller keeps fetching). UpdateVoter (UpdateRaftVoter)
// records a voter's listener and directory id: nothing is written when
// they are unchanged; a change is a new Raft address, which
// hashicorp/raft v1.7.2 cannot apply to a live member in place without a
// data race, so the voter is removed and added back (update_voter.go). The configuration, kept by
// Raft in its log and snapshots, is the voter set across restarts;
// controller.quorum.voters only seeds it on first start. A member's Raft
// address carries its Kafka listener name and directory id after its
// host:port (Member), so DescribeQuorum can name them on any leader.
//
// # Transport
//
// Raft speaks its own RPCs (hashicorp's network transport) on the port of
// the node's controller listener, the one its controller.quorum.voters
// entry names, so a Kafka compose file's voter list works unchanged and no
// extra port is opened. Listener shares that port: a samsa node opens a
// Raft connection with Preamble (0xff "SRAFT" 0x00 0x01); any other
// connection is a Kafka client of the controller listener (a Kafka request
// starts with a non-negative int32 size, never 0xff) and goes to the
// listener's Kafka handler. Tests use raft.NewInmemTransport instead.
//
// A broker-only node (an observer) accepts no Raft on its listeners
// (ListenBroker closes connections that open with a Raft preamble): it
// dials the voters' controller listeners itself and parks idle connections
// there, opened with ReversePreamble and its Raft address (StartReverse).
// A voter's Dial of that address takes a parked connection (waiting up to
// the dial timeout) instead of dialing TCP; the observer hands the
// connection to its Raft transport when the first byte of an RPC arrives
// and parks a replacement. An address that has not parked anything for a
// minute is dialed over TCP, as earlier builds' observers expect.
//
// A controller listener mapped to SSL, SASL_PLAINTEXT or SASL_SSL is
// opened with ListenSecure (ListenBrokerSecure on a broker-only node) and
// a Security the broker builds from the listener's settings: an accepted
// connection completes its TLS handshake before its first byte is read;
// a Raft connection's preamble (either kind) is followed by Kafka's SASL
// exchange (Security.Admit, the broker's SASL server), and nothing of it
// reaches Raft or is parked before that succeeds. Dial and the reverse
// connections run the client side (Security.Dial: TCP and TLS;
// Security.Login: SASL after the preamble, before the reverse header).
// The zero Security is PLAINTEXT, byte for byte as before.
//
// # Timeouts
//
// controller.quorum.election.timeout.ms (default 1 s) is both Raft's
// heartbeat timeout (a follower without word from the leader starts an
// election) and its election timeout; the leader lease is half of it, so an
// active controller cut off from the majority steps down within about that
// time. A quorum of one voter uses at most 50 ms, so a single node becomes
// active at once on start.
//
// # Migration
//
// A node that finds no Raft state but a metadata.log from an earlier
// single-node samsa imports it as the first entry of a one-voter quorum
// and renames it to metadata.log.imported (ImportFileLog). The Raft files
// are hashicorp's formats; a change of raft or raft-boltdb major version
// needs its own migration note here.
package quorum
