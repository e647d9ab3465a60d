package controller

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt golden output")

// TestDataDriven runs the scripts in testdata/. Each case is a command line,
// optional input lines, "----", and the expected output, ended by a blank
// line. Run with -rewrite to regenerate the expected output.
//
// Commands:
//
//	register <id> [rack=R] [dirs=a,b] register broker <id> at h:<9090+id>, with log
//	                                   directories named by letters (goldenDir)
//	cordon <id> [a,b]                  broker <id> reports its cordoned directories
//	offline-dirs <id> a,b              broker <id> reports offline directories
//	assign-dirs <id> <dir> <topic>/<partition>...   AssignReplicasToDirs of broker <id>
//	reassign <topic>/<partition> <replicas,...>     start a reassignment (empty: cancel)
//	fence <id> | unfence <id>
//	create-topics [validate]          input: "<name> [partitions=N] [rf=N] [assign=1,2;2,3] [k=v...]"
//	delete-topics <name>...
//	create-partitions <topic> <count> [assign=1,2;2,3]
//	alter-isr <topic> <partition> <leader> <isr,...> [recovering]
//	                                   uses the current epochs; recovering: the
//	                                   leader's recovery state is RECOVERING
//	elect preferred|unclean <topic>/<partition>...
//	alter-config <topic> set|delete|append|subtract <name> [value]
//	restart                            replay the log into a new controller
//	restart-broker <id> clean|unclean  a new incarnation of broker <id> registers,
//	                                   with (clean) or without its last epoch
//	image                              print the image (topic ids omitted)
//
// Files named elr*.txt run with eligible leader replicas enabled (each
// topic's min.insync.replicas config, default 1).
func TestDataDriven(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	log := NewMemLog()
	var elr ELRPolicy
	if strings.HasPrefix(filepath.Base(file), "elr") {
		elr = goldenMinISR
	}
	c := mustNew(t, log, elr)
	var out strings.Builder
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		start := i
		var input []string
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: missing ----", file, start+1)
		}
		i++
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := strings.TrimRight(runCommand(t, &c, log, elr, line, input), "\n")
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, start+1, line, got, strings.Join(want, "\n"))
		}
		out.WriteString(line + "\n")
		for _, in := range input {
			out.WriteString(in + "\n")
		}
		out.WriteString("----\n" + got + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goldenMinISR is the ELRPolicy of the elr*.txt scripts.
func goldenMinISR(t *Topic) int {
	n, err := strconv.Atoi(t.Configs["min.insync.replicas"])
	if err != nil {
		return 1
	}
	return n
}

func mustNew(t *testing.T, log MetadataLog, elr ELRPolicy) *Controller {
	c, err := New(Options{NodeID: 1, ClusterID: "golden", Log: log, Rand: testRand(7), Logger: quietLogger, DefaultPartitions: 1, DefaultReplicationFactor: 1,
		EligibleLeaderReplicas: elr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func codeName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("code %d", code)
}

func parseInts(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		out = append(out, int32(n))
	}
	return out
}

func parseAssign(s string) [][]int32 {
	var out [][]int32
	for _, part := range strings.Split(s, ";") {
		out = append(out, parseInts(part))
	}
	return out
}

func parseTopicPartition(s string) TopicPartition {
	name, p, _ := strings.Cut(s, "/")
	n, _ := strconv.Atoi(p)
	return TopicPartition{name, int32(n)}
}

func runCommand(t *testing.T, c **Controller, log MetadataLog, elr ELRPolicy, line string, input []string) string {
	args := strings.Fields(line)
	atoi := func(s string) int32 { n, _ := strconv.Atoi(s); return int32(n) }
	errStr := func(err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	}
	switch args[0] {
	case "register":
		id := atoi(args[1])
		b := Broker{ID: id, Host: "h", Port: 9090 + id}
		for _, a := range args[2:] {
			if r, ok := strings.CutPrefix(a, "rack="); ok {
				b.Rack = &r
			}
			if d, ok := strings.CutPrefix(a, "dirs="); ok {
				b.LogDirs = goldenDirs(d)
			}
		}
		return errStr((*c).RegisterBroker(b))
	case "cordon", "offline-dirs":
		id := atoi(args[1])
		var dirs []Uuid
		if len(args) > 2 {
			dirs = goldenDirs(args[2])
		}
		report := (*c).ReportCordonedLogDirs
		if args[0] == "offline-dirs" {
			report = (*c).ReportOfflineLogDirs
		}
		code, err := report(id, (*c).Image().Brokers[id].Epoch, dirs)
		if err != nil {
			return errStr(err)
		}
		return codeName(code)
	case "assign-dirs":
		id := atoi(args[1])
		img := (*c).Image()
		var reps []TopicIDPartitions
		for _, a := range args[3:] {
			tp := parseTopicPartition(a)
			reps = append(reps, TopicIDPartitions{TopicID: img.Topics[tp.Topic].ID, Partitions: []int32{tp.Partition}})
		}
		code, err := (*c).AssignReplicasToDirs(id, img.Brokers[id].Epoch, goldenDirs(args[2])[0], reps)
		if err != nil {
			return errStr(err)
		}
		return codeName(code)
	case "reassign":
		var b strings.Builder
		for _, r := range (*c).AlterReassignments([]Reassignment{{parseTopicPartition(args[1]), parseInts(strings.Join(args[2:], ""))}}) {
			fmt.Fprintf(&b, "%s/%d: %s\n", r.Topic, r.Partition, strings.TrimSpace(codeName(r.ErrorCode)+" "+r.ErrorMessage))
		}
		return b.String()
	case "restart-broker":
		id := atoi(args[1])
		b := (*c).Image().Brokers[id]
		prev := int64(-1)
		if args[2] == "clean" {
			prev = b.Epoch
		}
		b.Incarnation = fmt.Sprintf("incarnation-%d", (*c).Image().Offset)
		return errStr((*c).RegisterIncarnation(b, prev))
	case "fence", "unfence":
		return errStr((*c).FenceBroker(atoi(args[1]), args[0] == "fence"))
	case "create-topics":
		var reqs []CreateTopic
		for _, in := range input {
			f := strings.Fields(in)
			req := CreateTopic{Name: f[0], NumPartitions: -1, ReplicationFactor: -1}
			if f[0] == `""` {
				req.Name = ""
			}
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "partitions":
					req.NumPartitions = atoi(v)
				case "rf":
					req.ReplicationFactor = int16(atoi(v))
				case "assign":
					req.Assignment = map[int32][]int32{}
					for p, r := range parseAssign(v) {
						req.Assignment[int32(p)] = r
					}
				default:
					if req.Configs == nil {
						req.Configs = map[string]string{}
					}
					req.Configs[k] = v
				}
			}
			reqs = append(reqs, req)
		}
		var b strings.Builder
		for _, r := range (*c).CreateTopics(reqs, len(args) > 1 && args[1] == "validate") {
			fmt.Fprintf(&b, "%s: %s", r.Name, codeName(r.ErrorCode))
			if r.ErrorCode == 0 {
				fmt.Fprintf(&b, " partitions=%d rf=%d", r.NumPartitions, r.ReplicationFactor)
			} else {
				fmt.Fprintf(&b, ": %s", r.ErrorMessage)
			}
			b.WriteString("\n")
		}
		return b.String()
	case "delete-topics":
		var b strings.Builder
		for _, r := range (*c).DeleteTopics(args[1:], nil) {
			fmt.Fprintf(&b, "%s: %s\n", r.Name, codeName(r.ErrorCode))
		}
		return b.String()
	case "create-partitions":
		var assign [][]int32
		if len(args) > 3 {
			assign = parseAssign(strings.TrimPrefix(args[3], "assign="))
		}
		code, msg := (*c).CreatePartitions(args[1], atoi(args[2]), assign, false)
		return strings.TrimSuffix(codeName(code)+": "+msg, ": ")
	case "alter-isr":
		top := (*c).Image().Topics[args[1]]
		p := top.Partitions[atoi(args[2])]
		recovery := LeaderRecovered
		if len(args) > 5 && args[5] == "recovering" {
			recovery = LeaderRecovering
		}
		got, code, msg := (*c).AlterPartitionRecovery(AlterPartition{top.ID, p.Partition, atoi(args[3]), p.LeaderEpoch, p.PartitionEpoch, parseInts(args[4])}, recovery)
		return fmt.Sprintf("%s %s isr=%v epochs=%d/%d", codeName(code), msg, got.ISR, got.LeaderEpoch, got.PartitionEpoch)
	case "elect":
		typ := ElectPreferred
		if args[1] == "unclean" {
			typ = ElectUnclean
		}
		var tps []TopicPartition
		for _, a := range args[2:] {
			tps = append(tps, parseTopicPartition(a))
		}
		var b strings.Builder
		for _, r := range (*c).ElectLeaders(typ, tps) {
			fmt.Fprintf(&b, "%s/%d: %s\n", r.Topic, r.Partition, codeName(r.ErrorCode))
		}
		return b.String()
	case "alter-config":
		op := map[string]OpType{"set": OpSet, "delete": OpDelete, "append": OpAppend, "subtract": OpSubtract}[args[2]]
		cop := ConfigOp{Name: args[3], Op: op}
		if len(args) > 4 {
			cop.Value = &args[4]
		}
		code, msg := (*c).AlterTopicConfigs(args[1], []ConfigOp{cop}, false)
		return strings.TrimSuffix(codeName(code)+": "+msg, ": ")
	case "restart":
		before := (*c).Image()
		*c = mustNew(t, log, elr)
		if fmt.Sprint(dumpImage(before)) != fmt.Sprint(dumpImage((*c).Image())) {
			return "image changed across restart"
		}
		return "ok"
	case "image":
		return dumpImage((*c).Image())
	}
	t.Fatalf("unknown command %q", line)
	return ""
}

func dumpImage(img *Image) string {
	var b strings.Builder
	fmt.Fprintf(&b, "offset=%d\n", img.Offset)
	for _, id := range sortedInt32Keys(img.Brokers) {
		br := img.Brokers[id]
		rack := ""
		if br.Rack != nil {
			rack = " rack=" + *br.Rack
		}
		fence := ""
		if br.Fenced {
			fence = " fenced"
		}
		fmt.Fprintf(&b, "broker %d %s:%d%s%s", id, br.Host, br.Port, rack, fence)
		if len(br.LogDirs) > 0 {
			fmt.Fprintf(&b, " dirs=%s", goldenDirNames(br.LogDirs))
		}
		if d := img.CordonedLogDirs(id); len(d) > 0 {
			fmt.Fprintf(&b, " cordoned=%s", goldenDirNames(d))
		}
		if d := img.OfflineLogDirs(id); len(d) > 0 {
			fmt.Fprintf(&b, " offline=%s", goldenDirNames(d))
		}
		b.WriteString("\n")
	}
	for _, res := range sortedKeys(img.BrokerConfigs) {
		for _, k := range sortedKeys(img.BrokerConfigs[res]) {
			fmt.Fprintf(&b, "broker-config %q %s=%s\n", res, k, img.BrokerConfigs[res][k])
		}
	}
	for _, name := range sortedKeys(img.Topics) {
		top := img.Topics[name]
		fmt.Fprintf(&b, "topic %s", name)
		for _, k := range sortedKeys(top.Configs) {
			fmt.Fprintf(&b, " %s=%s", k, top.Configs[k])
		}
		b.WriteString("\n")
		for _, p := range top.Partitions {
			fmt.Fprintf(&b, "  %d leader=%d epochs=%d/%d replicas=%v isr=%v", p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.ISR)
			if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
				fmt.Fprintf(&b, " elr=%v lastKnownElr=%v", p.ELR, p.LastKnownELR)
			}
			if p.LeaderRecoveryState == LeaderRecovering {
				b.WriteString(" RECOVERING")
			}
			if p.Reassigning() {
				fmt.Fprintf(&b, " adding=%v removing=%v", p.AddingReplicas, p.RemovingReplicas)
			}
			if p.Directories != nil {
				fmt.Fprintf(&b, " dirs=%s", goldenDirNames(p.Directories))
			}
			var offline []int32
			for _, r := range p.Replicas {
				if img.ReplicaOffline(r, top.ID, p.Partition) {
					offline = append(offline, r)
				}
			}
			if len(offline) > 0 {
				fmt.Fprintf(&b, " offline-dir=%v", offline)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func sortedInt32Keys[V any](m map[int32]V) []int32 {
	var keys []int32
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// goldenDirs turns comma-separated letters into directory ids: "a" is
// Uuid{0xda, 'a'}, so no name gives a reserved id.
func goldenDirs(s string) []Uuid {
	var out []Uuid
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			var id Uuid
			id[0] = 0xda
			copy(id[1:], f)
			out = append(out, id)
		}
	}
	return out
}

// goldenDirNames is the inverse of goldenDirs, naming the reserved ids.
func goldenDirNames(dirs []Uuid) string {
	names := make([]string, len(dirs))
	for i, d := range dirs {
		switch d {
		case DirMigrating:
			names[i] = "MIGRATING"
		case DirUnassigned:
			names[i] = "UNASSIGNED"
		case DirLost:
			names[i] = "LOST"
		default:
			names[i] = strings.TrimRight(string(d[1:]), "\x00")
		}
	}
	return "[" + strings.Join(names, " ") + "]"
}
