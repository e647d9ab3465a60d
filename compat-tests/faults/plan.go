package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// Plan is one fault run: the cluster size, the steps, and the workload.
type Plan struct {
	Nodes int
	Seed  uint64
	Steps []Step
	// Deadline bounds the fault phase; steps left when it passes are not run.
	Deadline time.Duration
	Queue    QueueOptions
	// Loopback runs the nodes on loopback even where namespaces work
	// (network faults are then skipped).
	Loopback bool
	// Proxy runs the nodes behind the proxy network (ProxyNet) even
	// where namespaces work.
	Proxy bool
	// Quiet is the pause between steps (the workload runs on a healthy
	// cluster), besides recovery.
	Quiet time.Duration
	// DiskLimit gives every node a tmpfs log directory of this size
	// (Config.DiskLimit) where mount(2) is allowed, for disk-full steps;
	// elsewhere those steps are skipped.
	DiskLimit int64
	// DirLimit gives every node a second log directory on a tmpfs of this
	// size (Config.DirLimit) where mount(2) is allowed, for dir-full
	// steps (DirFullLeader); elsewhere those steps are skipped.
	DirLimit int64
	// LazyFS is Config.LazyFS: power cuts through lazyfs (soaks only).
	LazyFS string
}

// SoakTargets are the minimum numbers of the three headline faults a soak
// plan contains; the other kinds are mixed in at a quarter of their total.
type SoakTargets struct {
	LeaderKills, LeaderPartitions, Pauses int
	// DiskFulls is the number of disk-full steps (DiskFullLeader); they
	// need Plan.DiskLimit.
	DiskFulls int
	// SlowLeaders and LossyLinks are the numbers of slow-leader and
	// lossy-link steps (SlowLeader, LossyLink); they need the proxy
	// network and are skipped elsewhere.
	SlowLeaders, LossyLinks int
	// DirFulls is the number of steps filling one of two log directories
	// of a node (DirFullLeader); they need Plan.DirLimit.
	DirFulls int
	// PowerLosses is the number of power-cut steps (power.go): half of
	// them on partition leaders, the rest on the active controller, the
	// group coordinator, the transaction coordinator and a follower whose
	// leader is then killed, in turn.
	PowerLosses int
	// Combined is the number of combined steps (combined.go): two nodes
	// killed in quick succession, the controller paused while a leader
	// is cut off, and every node killed at once, in turn.
	Combined int
}

// SoakSteps builds a shuffled schedule with exactly the target counts of
// leader kills, leader partitions (isolation and minority splits) and
// pauses, plus coordinator, controller, bridge, majority-split, minority
// kill and rolling-restart steps.
func SoakSteps(seed uint64, t SoakTargets, holdMin, holdMax time.Duration) []Step {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	var kinds []Kind
	add := func(k Kind, n int) {
		for range n {
			kinds = append(kinds, k)
		}
	}
	add(KillLeader, t.LeaderKills)
	for i := range t.LeaderPartitions {
		if i%2 == 0 {
			kinds = append(kinds, IsolateLeader)
		} else {
			kinds = append(kinds, SplitLeaderInMinority)
		}
	}
	for i := range t.Pauses {
		if i%4 == 3 {
			kinds = append(kinds, PauseCoordinator)
		} else {
			kinds = append(kinds, PauseLeader)
		}
	}
	add(DiskFullLeader, t.DiskFulls)
	add(SlowLeader, t.SlowLeaders)
	add(LossyLink, t.LossyLinks)
	add(DirFullLeader, t.DirFulls)
	for i := range t.PowerLosses {
		kinds = append(kinds, powerLossKind(i))
	}
	for i := range t.Combined {
		kinds = append(kinds, combinedKind(i))
	}
	extra := (t.LeaderKills + t.LeaderPartitions + t.Pauses) / 4
	others := []Kind{KillCoordinator, KillController, IsolateCoordinator, IsolateTxnCoordinator,
		SplitLeaderInMajority, BridgeSplit, KillMinority, RollingRestart}
	for i := range extra {
		k := others[i%len(others)]
		if k == RollingRestart && i%(2*len(others)) != len(others)-1 {
			k = KillLeader // rolling restarts are long: half as many
		}
		kinds = append(kinds, k)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	steps := make([]Step, len(kinds))
	for i, k := range kinds {
		hold := holdMin
		if holdMax > holdMin {
			hold += time.Duration(rng.Int64N(int64(holdMax - holdMin)))
		}
		steps[i] = Step{Kind: k, Hold: hold.Round(100 * time.Millisecond), Pick: rng.Uint32()}
	}
	return steps
}

// soakDiskLimit is each node's tmpfs in a soak with disk-full steps,
// soakDirLimit its second log directory's in a soak with dir-full steps.
const (
	soakDiskLimit = 256 << 20
	soakDirLimit  = 64 << 20
)

// EnvPlan reads a plan's overrides from the environment (run.sh sets them):
//
//	SAMSA_FAULTS_NODES      3 or 5
//	SAMSA_FAULTS_SEED       schedule seed (default: time-based, printed)
//	SAMSA_FAULTS_TARGETS    kills,partitions,pauses[,disk-fulls[,slow[,lossy[,dir-fulls[,power-losses[,combined]]]]]]
//	                        for a soak (e.g. 100,50,50); disk-full steps give
//	                        every node a tmpfs log directory, dir-full steps
//	                        a second log directory on a tmpfs; slow-leader and
//	                        lossy-link steps need the proxy network
//	SAMSA_FAULTS_DEADLINE   Go duration bounding the fault phase
//	SAMSA_FAULTS_ACKS       1 for the acks=1 comparison run
//	SAMSA_FAULTS_UNCLEAN    true for unclean.leader.election.enable=true
//	SAMSA_FAULTS_SEGMENT_BYTES  the workload topic's segment.bytes (small:
//	                        frequent rolls, for power cuts)
//	SAMSA_FAULTS_LAZYFS     path of a lazyfs binary: log dirs on lazyfs,
//	                        power cuts clear its cache (lazyfs.go)
//	SAMSA_FAULTS_LOOPBACK   1 to run on loopback (no network faults)
//	SAMSA_FAULTS_PROXY      1 to run behind the proxy network
func EnvPlan(p *Plan) error {
	if os.Getenv("SAMSA_FAULTS_LOOPBACK") == "1" {
		p.Loopback = true
	}
	if os.Getenv("SAMSA_FAULTS_PROXY") == "1" {
		p.Proxy = true
	}
	if v := os.Getenv("SAMSA_FAULTS_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("faults: SAMSA_FAULTS_NODES: %w", err)
		}
		p.Nodes = n
	}
	if v := os.Getenv("SAMSA_FAULTS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("faults: SAMSA_FAULTS_SEED: %w", err)
		}
		p.Seed = s
	}
	if v := os.Getenv("SAMSA_FAULTS_DEADLINE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("faults: SAMSA_FAULTS_DEADLINE: %w", err)
		}
		p.Deadline = d
	}
	if v := os.Getenv("SAMSA_FAULTS_TARGETS"); v != "" {
		f := strings.Split(v, ",")
		if len(f) < 3 || len(f) > 9 {
			return fmt.Errorf("faults: SAMSA_FAULTS_TARGETS wants kills,partitions,pauses[,disk-fulls[,slow[,lossy[,dir-fulls[,power-losses[,combined]]]]]]: %q", v)
		}
		var n [9]int
		for i := range f {
			x, err := strconv.Atoi(strings.TrimSpace(f[i]))
			if err != nil {
				return fmt.Errorf("faults: SAMSA_FAULTS_TARGETS: %w", err)
			}
			n[i] = x
		}
		p.Steps = SoakSteps(p.Seed, SoakTargets{LeaderKills: n[0], LeaderPartitions: n[1], Pauses: n[2], DiskFulls: n[3],
			SlowLeaders: n[4], LossyLinks: n[5], DirFulls: n[6], PowerLosses: n[7], Combined: n[8]}, 2*time.Second, 8*time.Second)
		if n[3] > 0 {
			p.DiskLimit = soakDiskLimit
		}
		if n[6] > 0 {
			p.DirLimit = soakDirLimit
		}
	}
	if os.Getenv("SAMSA_FAULTS_ACKS") == "1" {
		p.Queue.Acks = 1
	}
	p.LazyFS = os.Getenv("SAMSA_FAULTS_LAZYFS")
	if v := os.Getenv("SAMSA_FAULTS_SEGMENT_BYTES"); v != "" {
		if p.Queue.TopicConfigs == nil {
			p.Queue.TopicConfigs = map[string]*string{}
		}
		p.Queue.TopicConfigs["segment.bytes"] = &v
	}
	if os.Getenv("SAMSA_FAULTS_UNCLEAN") == "true" {
		if p.Queue.TopicConfigs == nil {
			p.Queue.TopicConfigs = map[string]*string{}
		}
		t := "true"
		p.Queue.TopicConfigs["unclean.leader.election.enable"] = &t
	}
	return nil
}
