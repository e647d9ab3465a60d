#!/usr/bin/env bash
# run.sh runs a long fault soak of the queue workload (see doc.go) and prints
# the seed, so that a failing schedule can be replayed.
#
#   compat-tests/faults/run.sh [-n nodes] [-t kills,partitions,pauses[,disk-fulls[,slow[,lossy[,dir-fulls[,power[,combined]]]]]]]
#                              [-s seed] [-d deadline] [-r results.jsonl] [--acks1] [--unclean]
#                              [--loopback | --proxy] [--kip848] [--power weight] [--combined weight] [--segment-bytes n]
#                              [--lazyfs path]
#   compat-tests/faults/run.sh --ctxn steps [-n nodes] [-s seed] [-r results.jsonl]
#   compat-tests/faults/run.sh --ctp steps [-n nodes] [-s seed] [-r results.jsonl]
#   compat-tests/faults/run.sh --share steps [-n nodes] [-s seed] [-d deadline] [-r results.jsonl]
#   compat-tests/faults/run.sh --extra     # the scenarios too long for CI (below)
#   compat-tests/faults/run.sh --extra5    # the membership and unclean scenarios on 5 voters
#
# Defaults: 3 nodes, 100 leader kills, 50 leader partitions, 50 pauses (plus
# a quarter as many coordinator, controller, bridge, majority-split,
# minority-kill and rolling-restart steps), 25 power cuts, no disk-full steps, deadline 6h,
# results appended to compat-tests/faults/results.jsonl. Disk-full steps give
# every node a tmpfs log directory (root). Network namespaces need root and
# ip(8); without, the nodes run behind the proxy network (--proxy forces it;
# --loopback runs without network faults, counted as skipped).
# The fifth and sixth numbers of -t are slow-leader steps (every link of a
# partition leader, clients' too, gets 50 ms + up to 150 ms latency) and
# lossy-link steps (the link between a leader and another replica stalls
# for 50-300 ms on 10% of chunks: TCP loses no bytes, so loss is emulated
# by the stalls its retransmissions cause); both need the proxy network,
# e.g. run.sh --proxy -t 10,5,5,0,10,10; without it they are skipped.
# The seventh number is dir-full steps: every node gets a second log
# directory on a 64 MiB tmpfs of its own, and a step fills it on a node
# holding workload partitions there (the node must keep running on its
# other directory, KIP-858), e.g. run.sh -t 0,0,0,0,0,0,10.
# The eighth number is power cuts (power.go: the node is SIGKILLed and its
# log directories lose what samsa had not fsynced, then it restarts):
# half on partition leaders, the rest on the active controller, the group
# coordinator, the transaction coordinator and a follower whose leader is
# SIGKILLed as soon as it is back, e.g. run.sh -t 10,5,5,0,0,0,0,20.
# The ninth number is combined steps (combined.go), in turn: a partition
# leader and a second node SIGKILLed 0-1.5 s apart and restarted together
# (kill-two-quick), the active controller paused past the session timeout
# while another node's partition leader is cut off
# (pause-controller-isolate-leader), every node SIGKILLed at once and
# started again (kill-all), and a replica of a partition moved while every
# node restarts in turn (reassign-rolling-restart), e.g.
# run.sh -t 10,5,5,0,0,0,0,5,8. --combined W adds those four kinds with
# weight W each to the weighted schedules of --ctxn, --ctp and --share.
# --power W adds the five power-cut kinds with weight W each to the seeded
# schedules of --ctxn, --ctp and --share (their weights are listed in
# ctxn_test.go, eos_clients_test.go and share_test.go), and to --share's
# also power-loss-share-coordinator.
# --segment-bytes N sets the queue workload topic's segment.bytes (e.g.
# 16384: a roll every few seconds, so power cuts also meet closed segments,
# snapshots and active segments whose names were never synced).
# --lazyfs PATH (a lazyfs binary, github.com/dsrhaslab/lazyfs; root, fuse3)
# puts every node's log directory on lazyfs, and power cuts clear its
# cache of unsynced writes instead of emulating the loss (lazyfs.go).
#
# --extra runs TestDiskFullLeader, TestDirFullLeader (three steps),
# TestUncleanElection, TestMemberRemovedAndAdded, TestQueueUnderSlowLinks
# TestStaleTxnCoordinatorEndTxn and TestPowerLossAll (every node's power cut
# at once; losses reported, not failed on) (a few minutes in all).
# --extra5 runs TestMemberRemovedAndAddedFiveNodes and TestUncleanElectionFiveNodes
# (about 4 minutes).
# --kip848 runs the soak with a KIP-848 consumer group of three members
# (TestKIP848GroupUnderFaults) in place of the classic one; a member is cut
# off without leaving and replaced after every fourth step.
# --ctxn N runs TestConfluentTxnSoak: two confluent-kafka-go transactional
# producers and read_committed consumers (child processes) under N seeded
# steps (transaction coordinator cut off or killed, leaders killed, cut
# off or paused), a producer process SIGKILLed after every second step;
# its figures go to the results file as workload "confluent-txn".
# --ctp N runs TestEOSOtherClientsSoak: a consume-transform-produce group of
# a franz-go, a confluent-kafka-go and a Java client member (the last two
# child processes) under N seeded steps (transaction and group coordinators
# and partition leaders killed, cut off or paused), a member process
# SIGKILLed inside a transaction after every step; its figures go to the
# results file as workload "ctp-clients".
# --share N runs TestShareGroupUnderFaults as a soak: a KIP-932 share group
# of three franz-go share consumers (accepting, releasing, rejecting) beside
# two idempotent producers, under N seeded steps (the leader of a
# __share_group_state partition, the group coordinator, the controller and
# partition leaders killed, cut off or paused, splits), a consumer cut off
# without leaving after every third step; its figures go to the results
# file as workload "share-group".
set -euo pipefail
cd "$(dirname "$0")/../.."

nodes=3 targets=100,50,50,0,0,0,0,25 seed="" deadline=6h results="" acks="" unclean="" flags="" test=TestQueueUnderFaults
while (($#)); do
	case $1 in
	-n) nodes=$2; shift ;;
	-t) targets=$2; shift ;;
	-s) seed=$2; shift ;;
	-d) deadline=$2; shift ;;
	-r) results=$2; shift ;;
	--acks1) acks=1 flags+=" --acks1" ;;
	--unclean) unclean=true flags+=" --unclean" ;;
	--loopback) export SAMSA_FAULTS_LOOPBACK=1; flags+=" --loopback" ;;
	--proxy) export SAMSA_FAULTS_PROXY=1; flags+=" --proxy" ;;
	--kip848) test=TestKIP848GroupUnderFaults flags+=" --kip848" ;;
	--power) export SAMSA_FAULTS_POWER_WEIGHT=$2; flags+=" --power $2"; shift ;;
	--combined) export SAMSA_FAULTS_COMBINED_WEIGHT=$2; flags+=" --combined $2"; shift ;;
	--segment-bytes) export SAMSA_FAULTS_SEGMENT_BYTES=$2; flags+=" --segment-bytes $2"; shift ;;
	--lazyfs) export SAMSA_FAULTS_LAZYFS=$2; flags+=" --lazyfs $2"; shift ;;
	--ctxn) test=TestConfluentTxnSoak flags+=" --ctxn $2"; export SAMSA_FAULTS_CTXN_STEPS=$2; shift ;;
	--ctp) test=TestEOSOtherClientsSoak flags+=" --ctp $2"; export SAMSA_FAULTS_CTP_STEPS=$2; shift ;;
	--share) test=TestShareGroupUnderFaults flags+=" --share $2"; export SAMSA_FAULTS_SHARE_STEPS=$2; shift ;;
	--extra)
		export SAMSA_FAULTS_EXTRA=1
		exec go test -count=1 -timeout 30m -run '^(TestDiskFullLeader|TestDirFullLeader|TestUncleanElection|TestMemberRemovedAndAdded|TestQueueUnderSlowLinks|TestStaleTxnCoordinatorEndTxn|TestPowerLossAll)$' -v ./compat-tests/faults/ ;;
	--extra5)
		export SAMSA_FAULTS_EXTRA=1
		exec go test -count=1 -timeout 30m -run '^(TestMemberRemovedAndAddedFiveNodes|TestUncleanElectionFiveNodes)$' -v ./compat-tests/faults/ ;;
	*) echo "usage: $0 [-n nodes] [-t kills,partitions,pauses[,disk-fulls[,slow[,lossy[,dir-fulls[,power[,combined]]]]]]] [-s seed] [-d deadline] [-r results] [--acks1] [--unclean] [--loopback|--proxy] [--kip848|--ctxn steps|--ctp steps|--share steps] [--power weight] [--combined weight] [--segment-bytes n] [--lazyfs path] | --extra | --extra5" >&2; exit 2 ;;
	esac
	shift
done
seed=${seed:-$(date +%s%N)}
results=${results:-$PWD/compat-tests/faults/results.jsonl}
echo "faults soak: nodes=$nodes targets=$targets seed=$seed deadline=$deadline results=$results"
echo "replay: $0 -n $nodes -t $targets -s $seed$flags"
export SAMSA_FAULTS_NODES=$nodes SAMSA_FAULTS_TARGETS=$targets SAMSA_FAULTS_SEED=$seed
export SAMSA_FAULTS_DEADLINE=$deadline SAMSA_FAULTS_RESULTS=$results
export SAMSA_FAULTS_ACKS=$acks SAMSA_FAULTS_UNCLEAN=$unclean
# The go test timeout covers the deadline plus start, recovery and final read.
exec go test -count=1 -timeout 0 -run "^$test\$" -v ./compat-tests/faults/
