package replica

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt golden output")

// TestLeaderRules runs the scripts in testdata/: a leader (node 1) and its
// followers driven through the pure rules, with a clock in milliseconds.
// Each case is a command line, "----", and the expected output, ended by a
// blank line; -rewrite regenerates the output.
//
// Commands:
//
//	leader replicas=1,2,3 isr=1,2,3 leo=N [lag=MS]  become leader at t=0 (followers in the ISR caught up now)
//	append N                       leader LEO += N
//	fetch <id> <offset> at=MS       a follower fetch: update its state, then the HW
//	shrink at=MS                    the ISR check: out-of-sync followers leave the ISR
//	expand <id>                     may <id> join the ISR (and then it does)
//	state                           print HW, ISR and follower states
func TestLeaderRules(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runRulesScript(t, file) })
	}
}

type ruleLeader struct {
	replicas, isr []int32
	leo, hw       int64
	epochStart    int64
	lag           time.Duration
	followers     map[int32]FollowerState
}

func (l *ruleLeader) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hw=%d leo=%d isr=%s\n", l.hw, l.leo, ids(l.isr))
	for _, id := range l.replicas {
		if f, ok := l.followers[id]; ok {
			cu := "never"
			if !f.LastCaughtUp.IsZero() {
				cu = strconv.FormatInt(f.LastCaughtUp.Sub(t0).Milliseconds(), 10)
			}
			fmt.Fprintf(&b, "  %d: leo=%d caught-up=%s\n", id, f.LogEndOffset, cu)
		}
	}
	return b.String()
}

func ids(s []int32) string {
	parts := make([]string, len(s))
	for i, id := range s {
		parts[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func parseIDs(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, _ := strconv.Atoi(f)
		out = append(out, int32(n))
	}
	return out
}

func runRulesScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var l *ruleLeader
	var out strings.Builder
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		out.WriteString(line + "\n----\n")
		i++
		for i < len(lines) && lines[i] != "----" {
			i++
		}
		i++ // "----"
		start := i
		for i < len(lines) && lines[i] != "" {
			i++
		}
		want := strings.Join(lines[start:i], "\n")
		got := strings.TrimRight(runRule(t, &l, line), "\n")
		out.WriteString(got + "\n")
		if !*rewrite && got != want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, start, line, got, want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runRule(t *testing.T, lp **ruleLeader, line string) string {
	f := strings.Fields(line)
	kv := map[string]string{}
	var args []string
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			kv[k] = v
		} else {
			args = append(args, a)
		}
	}
	at := func() time.Time {
		n, _ := strconv.Atoi(kv["at"])
		return ms(n)
	}
	l := *lp
	switch f[0] {
	case "leader":
		leo, _ := strconv.ParseInt(kv["leo"], 10, 64)
		lag := 10 * time.Second
		if v, ok := kv["lag"]; ok {
			n, _ := strconv.Atoi(v)
			lag = time.Duration(n) * time.Millisecond
		}
		l = &ruleLeader{replicas: parseIDs(kv["replicas"]), isr: parseIDs(kv["isr"]), leo: leo, epochStart: leo, lag: lag,
			followers: map[int32]FollowerState{}}
		for _, id := range l.replicas[1:] {
			s := FollowerState{LogEndOffset: -1}
			if slices.Contains(l.isr, id) {
				s.LastCaughtUp = t0
			}
			l.followers[id] = s
		}
		*lp = l
		l.hw = HighWatermark(0, 1, l.leo, l.isr, l.followers)
		return l.state()
	case "append":
		n, _ := strconv.ParseInt(args[0], 10, 64)
		l.leo += n
		l.hw = HighWatermark(l.hw, 1, l.leo, l.isr, l.followers)
		return l.state()
	case "fetch":
		id, _ := strconv.Atoi(args[0])
		off, _ := strconv.ParseInt(args[1], 10, 64)
		l.followers[int32(id)] = UpdateFollowerFetch(l.followers[int32(id)], off, l.leo, at())
		l.hw = HighWatermark(l.hw, 1, l.leo, l.isr, l.followers)
		return l.state()
	case "shrink":
		outOf := OutOfSyncReplicas(1, l.isr, l.followers, at(), l.lag)
		l.isr = Without(l.isr, outOf)
		l.hw = HighWatermark(l.hw, 1, l.leo, l.isr, l.followers)
		return fmt.Sprintf("out-of-sync=%s\n%s", ids(outOf), l.state())
	case "expand":
		id, _ := strconv.Atoi(args[0])
		ok := CanJoinISR(int32(id), l.replicas, l.isr, l.followers[int32(id)].LogEndOffset, l.hw, l.epochStart)
		if ok {
			l.isr = append(l.isr, int32(id))
		}
		return fmt.Sprintf("can-join=%v\n%s", ok, l.state())
	case "state":
		return l.state()
	}
	t.Fatalf("unknown command %q", f[0])
	return ""
}
