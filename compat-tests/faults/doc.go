// Package faults is samsa's Jepsen-style fault-injection test bed: it starts
// three or five samsa processes as one KRaft cluster, each in its own network
// namespace joined to a bridge by a veth pair (NamespaceNet), runs a
// workload of real Kafka clients (franz-go) against it while a Nemesis
// injects faults, heals, reads everything back and checks the history for
// anomalies named after what they break (Check).
//
// Faults: SIGKILL and restart of a partition leader, the group coordinator,
// the active controller, or every replica but the leader; SIGSTOP longer
// than the broker session timeout; network partitions made of blackhole
// routes inside the namespaces (isolate a leader or coordinator, a
// majority/minority split with the leader on either side, a bridge node
// that sees two halves that do not see each other); rolling restarts with
// SIGTERM; a full disk on a partition leader (each node's log directory a
// tmpfs of its own, filled from outside: the node halts, its partitions
// must move and stay writable, and it is restarted after the hold); a full
// disk with two log directories per node (Config.DirLimit, jbod.go: the
// second a tmpfs of its own; the node must take only that directory
// offline and keep running, KIP-858); a power cut (power.go: SIGKILL,
// then PowerCut makes the node's log directories look as after a power
// failure, losing a random part of what samsa had not fsynced by its own
// flush discipline: the active segments' tails cut, 4 KiB pages of them
// zeroed, index tails dropped, names of never-synced files removed; the
// Raft directory, which fsyncs, is kept) of a partition leader, the group
// or transaction coordinator, the active controller, or a follower whose
// leader is SIGKILLed as soon as it is back (soaks with the queue,
// KIP-848, transaction, consume-transform-produce and share-group
// workloads, 3 and 5 nodes: 144 emulated power cuts losing 76.3 MB, 22
// through lazyfs, no anomaly; docs/DURABILITY.md,
// "Power loss"); a soak can run the cuts through lazyfs, a FUSE file
// system that drops unsynced writes for real (lazyfs.go, run.sh
// --lazyfs). Where namespaces are unavailable
// (not root, no ip(8)) the nodes run on loopback behind the proxy network
// (ProxyNet: a TCP proxy per node listener that finds the source node of a
// connection through /proc and stalls the connections of a cut link). The
// proxy network can also slow links without cutting them (Degradation:
// latency and jitter, a bandwidth cap, random stalls standing for packet
// loss, as this kernel has no tc netem), for the slow-leader and
// lossy-link steps; elsewhere those steps are skipped.
//
// Combined steps (combined.go; the ninth soak target): a partition leader
// and a second node SIGKILLed in quick succession and restarted together;
// the active controller paused past the session timeout while another
// node's partition leader is cut off; every node SIGKILLed at once and
// started again; a replica of a workload partition moved while every node
// restarts in turn (TestCombinedFaults). Every node's power cut at once
// (PowerLossAll, TestPowerLossAll in run.sh --extra) may lose
// acknowledged records, on Kafka too: it checks recovery and order only.
//
// Scenarios beside the random schedules: a forced unclean election (the
// ISR shrunk to the leader by a cut link, then the leader killed; RunUnclean)
// and a broker decommissioned and a fresh one added with partition
// reassignments under load (RunMembership, with broker-only and spare nodes:
// Cluster.AddBroker, Cluster.Retire).
//
// Checkers (History -> Report): lost (acknowledged, not in the final log),
// duplicated, reordered (one producer's records of a partition out of send
// order), inconsistent offsets (two values at one offset across acks, polls
// and the final read), non-monotonic polls (a consumer's offsets going
// backwards within one assignment), committed offsets moving backwards, and
// offsets below the group's commit never delivered to the group. The
// transaction workload checks read_committed (aborted or partial
// transactions visible, committed ones lost); the consume-transform-produce
// workload (EOSWorkload) checks that every acknowledged input record is in
// the transactional output exactly once (CheckEOS). The KIP-848 group
// workload (Group, RunGroupPlan) runs franz-go members with
// ServerSideBalancer, cuts members off and replaces them, and checks that
// no member receives a record below an acknowledged commit and that the
// group receives every record (CheckGroup); confluent-kafka-go idempotent
// producers (StartConfluentProducers, child processes) can run beside the
// franz-go ones; the parent reads each one's librdkafka debug log, and a
// record it acknowledged at -1001 and that is in no log counts as
// client-implicit-ack, not lost, only when that log shows its batch
// refused with nothing appended and then implicitly acked (RdkEvidence,
// finding 17 of docs/DURABILITY.md). The transaction workload also runs with other clients
// (ConfluentTxn, ctxn.go): confluent-kafka-go and Java client
// transactional producers and a confluent read_committed consumer, child
// processes that can be SIGKILLed mid-transaction, checked by CheckTxn on
// a confluent and a franz-go final read. The consume-transform-produce
// workload runs with other clients too (eos_child.go): confluent-kafka-go
// and Java client members (read_committed consumers, transactional
// producers, SendOffsetsToTransaction with the consumer's group metadata)
// in one group with a franz-go member, child processes SIGKILLed inside a
// transaction and restarted, judged by CheckEOS. The share-group workload
// (Share, RunSharePlan, share.go) runs a KIP-932 share group of franz-go
// share consumers that accept most records and release or reject some,
// flush their acknowledgements after every poll and record each delivery
// (delivery count, consumer, when its fetch was decoded) with the answer
// to its acknowledgement; its own faults kill or cut off the leader of the
// __share_group_state partition holding a share-partition's state, and
// consumers are cut off without leaving. CheckShare holds the history to
// KIP-932's guarantees: a successfully acknowledged accept or reject is
// final, delivery counts stay within the limit, one holder at a time,
// every record finished after the faults heal.
//
// Every process the package starts (nodes, client children) is started
// with compat-tests/childproc: it gets SIGKILL when the test process dies
// (a -timeout panic, a SIGKILL), and the first start of a later test
// process kills what a crashed one still left running (a record per
// child, checked by pid and start time).
//
// Usage:
//
//	go test ./compat-tests/faults/                      # short CI schedule
//	compat-tests/faults/run.sh -n 5 -t 100,50,50       # soak, prints the seed
//	compat-tests/faults/run.sh -s 123                   # replay a schedule
//	compat-tests/faults/run.sh --extra                  # disk full, unclean, members
//	compat-tests/faults/run.sh --extra5                 # members, unclean on 5 voters
//	compat-tests/faults/run.sh --kip848 -t 20,10,10     # soak with a KIP-848 group
//	compat-tests/faults/run.sh --ctxn 30                # confluent and Java transactions
//	compat-tests/faults/run.sh --ctp 30                 # consume-transform-produce of three clients
//	compat-tests/faults/run.sh --share 30               # a share group under 30 seeded steps
//	compat-tests/faults/run.sh -t 0,0,0,0,0,0,10        # 10 dir-full steps (two log dirs)
//	compat-tests/faults/run.sh -t 4,2,2,0,0,0,0,30 --segment-bytes 16384   # 30 power cuts
//	compat-tests/faults/run.sh --ctxn 30 --power 2      # power cuts in a weighted schedule
//	compat-tests/faults/run.sh -t 4,2,2,0,0,0,0,4,8     # 8 combined steps
//
// Keeping logs: SAMSA_FAULTS_KEEP_LOGS=<existing dir> keeps every run's
// node logs, KIP-848 members' franz-go logs (SAMSA_FAULTS_CLIENT_DEBUG=1:
// debug level), the confluent producers' librdkafka debug logs
// (confluent-producer-<id>.log) and group history in a directory of its
// own under it
// (KeepLogsDir: <Test>-<UTC start>-pid<N>), so -test.count and parallel
// binaries never overwrite a failing run's logs. The members log each
// OffsetFetch answer and where they start each partition ("faults:
// partition started ... source: committed offset | reset ..."), and after
// each recovery the nemesis logs any node whose own Metadata still names
// an older leader epoch than another's (finding 16 of docs/DURABILITY.md).
//
// Every name the package creates (namespaces samsaf-<pid>-<node>, bridge
// sfb<pid>, veths sfh<pid>x<node>) carries the test process id; a sweep at
// start removes those of dead processes.
package faults
