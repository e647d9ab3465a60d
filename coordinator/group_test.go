package coordinator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupDataDriven drives the Group state machine from
// testdata/group_*.txt. Commands (times t are milliseconds):
//
//	config [min-session=] [max-session=] [initial-delay=] [max-size=]   new group "g"
//	join t= w= [member=] [client=] [instance=] [session=] [rebalance=] [v=] [protocols=name:meta,...]
//	sync t= w= member= gen= [instance=] [assign=member:bytes,...]
//	heartbeat t= member= gen= [instance=]
//	leave t= members=id|id/instance|/instance,...
//	commit t= member= gen= [instance=]
//	stored t= [fail]
//	tick t=
//	state
func TestGroupDataDriven(t *testing.T) {
	runDD(t, "testdata/group_*.txt", newGroupRunner)
}

var ddEpoch = time.UnixMilli(1_700_000_000_000)

func ddTime(c *ddCase) time.Time {
	ms, _ := strconv.ParseInt(c.args["t"], 10, 64)
	return ddEpoch.Add(time.Duration(ms) * time.Millisecond)
}

func ddInt(c *ddCase, key string, def int64) int64 {
	v, ok := c.args[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("line %d: %s=%q: %v", c.line, key, v, err))
	}
	return n
}

func ddOptString(c *ddCase, key string) *string {
	if v, ok := c.args[key]; ok {
		return &v
	}
	return nil
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func newGroupRunner() func(c *ddCase) string {
	var g *Group
	ids := map[string]int{}
	cfg := &GroupConfig{
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     300 * time.Second,
		InitialRebalanceDelay: 0,
		NewMemberID: func(prefix string) string {
			ids[prefix]++
			return fmt.Sprintf("%s-%d", prefix, ids[prefix])
		},
	}
	reset := func() { g = NewGroup(cfg, "g", ddEpoch) }
	reset()
	return func(c *ddCase) string {
		now := ddTime(c)
		var replies []Reply
		var out strings.Builder
		switch c.cmd {
		case "config":
			cfg.MinSessionTimeout = time.Duration(ddInt(c, "min-session", 6000)) * time.Millisecond
			cfg.MaxSessionTimeout = time.Duration(ddInt(c, "max-session", 300000)) * time.Millisecond
			cfg.InitialRebalanceDelay = time.Duration(ddInt(c, "initial-delay", 0)) * time.Millisecond
			cfg.MaxSize = int(ddInt(c, "max-size", 0))
			reset()
			return "ok"
		case "join":
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = int16(ddInt(c, "v", 9))
			req.Group = "g"
			req.MemberID = c.args["member"]
			req.InstanceID = ddOptString(c, "instance")
			req.SessionTimeoutMillis = int32(ddInt(c, "session", 10000))
			req.RebalanceTimeoutMillis = int32(ddInt(c, "rebalance", 30000))
			req.ProtocolType = "consumer"
			if v, ok := c.args["type"]; ok {
				req.ProtocolType = v
			}
			protos := c.args["protocols"]
			if protos == "" {
				protos = "range:m"
			}
			for _, p := range strings.Split(protos, ",") {
				if p == "none" {
					break
				}
				name, meta, _ := strings.Cut(p, ":")
				req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: []byte(meta)})
			}
			client := c.args["client"]
			if client == "" {
				client = "c"
			}
			replies = g.Join(now, Waiter(ddInt(c, "w", 0)), Client{ID: client, Host: "h"}, req)
		case "sync":
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group = "g"
			req.MemberID = c.args["member"]
			req.InstanceID = ddOptString(c, "instance")
			req.Generation = int32(ddInt(c, "gen", 0))
			if a := c.args["assign"]; a != "" {
				for _, p := range strings.Split(a, ",") {
					m, b, _ := strings.Cut(p, ":")
					req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(b)})
				}
			}
			replies = g.Sync(now, Waiter(ddInt(c, "w", 0)), req)
		case "heartbeat":
			req := kmsg.NewPtrHeartbeatRequest()
			req.MemberID = c.args["member"]
			req.InstanceID = ddOptString(c, "instance")
			req.Generation = int32(ddInt(c, "gen", 0))
			fmt.Fprintf(&out, "heartbeat: %s\n", errName(g.Heartbeat(now, req)))
		case "commit":
			code := g.CommitCheck(now, int32(ddInt(c, "gen", -1)), c.args["member"], ddOptString(c, "instance"))
			fmt.Fprintf(&out, "commit: %s\n", errName(code))
		case "leave":
			var ls []Leaver
			for _, m := range strings.Split(c.args["members"], ",") {
				id, inst, hasInst := strings.Cut(m, "/")
				l := Leaver{MemberID: id}
				if hasInst {
					l.InstanceID = &inst
				}
				ls = append(ls, l)
			}
			var codes []int16
			codes, replies = g.Leave(now, ls)
			names := make([]string, len(codes))
			for i, code := range codes {
				names[i] = errName(code)
			}
			fmt.Fprintf(&out, "leave: %s\n", strings.Join(names, " "))
		case "stored":
			var err error
			if _, ok := c.args["fail"]; ok {
				err = ErrWrite
			}
			replies = g.Stored(now, err)
		case "tick":
			replies = g.Tick(now)
		case "state":
		default:
			panic(fmt.Sprintf("line %d: unknown command %q", c.line, c.cmd))
		}
		for _, r := range replies {
			out.WriteString(formatReply(r) + "\n")
		}
		if g.PendingStore() {
			out.WriteString("store pending\n")
		}
		out.WriteString(formatGroup(g))
		return out.String()
	}
}

func formatReply(r Reply) string {
	if j := r.Join; j != nil {
		s := fmt.Sprintf("w%d join %s member=%s gen=%d", r.To, errName(j.ErrorCode), j.MemberID, j.Generation)
		if j.ErrorCode == 0 {
			s += fmt.Sprintf(" protocol=%s leader=%s", *j.Protocol, j.LeaderID)
			if len(j.Members) > 0 {
				var ms []string
				for _, m := range j.Members {
					ms = append(ms, m.MemberID+":"+string(m.ProtocolMetadata))
				}
				s += " members=" + strings.Join(ms, ",")
			}
			if j.SkipAssignment {
				s += " skip-assignment"
			}
		}
		return s
	}
	s := fmt.Sprintf("w%d sync %s", r.To, errName(r.Sync.ErrorCode))
	if r.Sync.ErrorCode == 0 {
		s += fmt.Sprintf(" assignment=%q", r.Sync.MemberAssignment)
	}
	return s
}

func ms(t time.Time) int64 { return t.Sub(ddEpoch).Milliseconds() }

func formatGroup(g *Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s gen=%d", g.state, g.generation)
	if g.protocol != "" {
		fmt.Fprintf(&b, " protocol=%s", g.protocol)
	}
	if g.leader != "" {
		fmt.Fprintf(&b, " leader=%s", g.leader)
	}
	if d, ok := g.NextDeadline(); ok {
		fmt.Fprintf(&b, " next=%d", ms(d))
	}
	for _, m := range g.members {
		fmt.Fprintf(&b, "\n  %s", m.id)
		if m.instanceID != nil {
			fmt.Fprintf(&b, " instance=%s", *m.instanceID)
		}
		if m.joinWaiter != 0 {
			fmt.Fprintf(&b, " joining=w%d", m.joinWaiter)
		}
		if m.syncWaiter != 0 {
			fmt.Fprintf(&b, " syncing=w%d", m.syncWaiter)
		}
		if g.pendingSync[m.id] {
			b.WriteString(" awaiting-sync")
		}
		if m.assignment != nil {
			fmt.Fprintf(&b, " assignment=%q", m.assignment)
		}
		fmt.Fprintf(&b, " session-until=%d", ms(m.heartbeatDeadline))
	}
	pend := make([]string, 0, len(g.pending))
	for id, d := range g.pending {
		pend = append(pend, fmt.Sprintf("%s(until=%d)", id, ms(d)))
	}
	slices.Sort(pend)
	for _, p := range pend {
		fmt.Fprintf(&b, "\n  pending %s", p)
	}
	return b.String()
}
