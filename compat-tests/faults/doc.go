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
// SIGTERM. Where namespaces are unavailable (not root, no ip(8)) the nodes
// run on loopback and the network faults are skipped and counted as such.
//
// Checkers (History -> Report): lost (acknowledged, not in the final log),
// duplicated, reordered (one producer's records of a partition out of send
// order), inconsistent offsets (two values at one offset across acks, polls
// and the final read), non-monotonic polls (a consumer's offsets going
// backwards within one assignment), committed offsets moving backwards, and
// offsets below the group's commit never delivered to the group.
//
// Usage:
//
//	go test ./compat-tests/faults/                      # short CI schedule
//	compat-tests/faults/run.sh -n 5 -t 100,50,50       # soak, prints the seed
//	SAMSA_FAULTS_SEED=123 compat-tests/faults/run.sh   # replay a schedule
//
// Every name the package creates (namespaces samsaf-<pid>-<node>, bridge
// sfb<pid>, veths sfh<pid>x<node>) carries the test process id; a sweep at
// start removes those of dead processes.
package faults
