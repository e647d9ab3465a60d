package systests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// ConsumerOptions configures a group of VerifiableConsumer processes, as
// verifiable_consumer.py does.
type ConsumerOptions struct {
	Topic string
	Group string
	// Members is the number of consumer processes (1 when 0).
	Members int
	// Protocol is "classic" (when empty) or "consumer" (KIP-848).
	Protocol string
	// Assignor is the classic assignment strategy (class name; the
	// service's default is RangeAssignor) or, with Protocol consumer, the
	// remote assignor ("range", the service's default; "" leaves it).
	Assignor string
	// Static gives member i group.instance.id "<group>-instance-<i>".
	Static bool
	// SessionTimeoutMS is --session-timeout (classic only; 0: 10000,
	// VerifiableConsumerTest's).
	SessionTimeoutMS int
	AutoCommit       bool
	// Verbose prints every record (record_data events), needed by
	// ConsumedValues.
	Verbose bool
	// ReadCommitted sets isolation.level=read_committed.
	ReadCommitted bool
	// Reset is --reset-policy (earliest when empty).
	Reset string
	// Extra are more consumer properties (key=value).
	Extra []string
	// VerifyOffsets makes an unexpected consumed offset an anomaly (the
	// service's verify_offsets, on by default there); here it is on unless
	// LooseOffsets.
	LooseOffsets bool
	// Loggers are log4j loggers (class names) of the consumer client and
	// their levels (DEBUG, INFO) to the members' stderr (Stderr), e.g.
	// FetchCollector at DEBUG, which logs the preferred read replica
	// (KIP-392) a fetch names.
	Loggers map[string]string
}

// memberState is verifiable_consumer.py's ConsumerState.
type memberState int

const (
	stateDead memberState = iota
	stateStarted
	stateRebalancing
	stateJoined
)

// member is one consumer process and its ConsumerEventHandler state.
type member struct {
	proc
	idx        int
	state      memberState
	revoked    int
	assigned   int
	assignment []TopicPartition
	position   map[TopicPartition]int64
	committed  map[TopicPartition]int64
	consumed   int64
	shutdowns  int
}

// Consumers is a group of VerifiableConsumer processes and their events.
type Consumers struct {
	o       ConsumerOptions
	members []*member

	// mu guards everything below and every member's state (not its proc):
	// a member's event handler takes it under the member's proc lock.
	mu             sync.Mutex
	globalPosition map[TopicPartition]int64
	globalCommit   map[TopicPartition]int64
	values         []int64
	recordsAt      map[TopicPartition]int64 // last record_data offset
	anomalies      []string
	warnings       int
}

// StartConsumers starts o.Members VerifiableConsumer processes.
func (tl *Tools) StartConsumers(t testing.TB, name string, o ConsumerOptions) *Consumers {
	t.Helper()
	if o.Members == 0 {
		o.Members = 1
	}
	c := &Consumers{o: o, globalPosition: map[TopicPartition]int64{}, globalCommit: map[TopicPartition]int64{},
		recordsAt: map[TopicPartition]int64{}}
	props := append([]string(nil), o.Extra...)
	if o.ReadCommitted {
		props = append(props, "isolation.level=read_committed")
	}
	cfg := tl.writeProps(t, name+".properties", append(props, "client.id="+name))
	log4j := ""
	if len(o.Loggers) > 0 {
		log4j = tl.writeLog4j(t, name+"-log4j2.properties", o.Loggers)
	}
	for i := 1; i <= o.Members; i++ {
		args := []string{"--bootstrap-server", tl.bootstrap, "--topic", o.Topic, "--group-id", o.Group,
			"--reset-policy", cmpOrS(o.Reset, "earliest"), "--command-config", cfg}
		if o.Verbose {
			args = append(args, "--verbose")
		}
		if o.Static {
			args = append(args, "--group-instance-id", o.Group+"-instance-"+strconv.Itoa(i))
		}
		if o.Protocol == "consumer" {
			args = append(args, "--group-protocol", "consumer")
			if o.Assignor != "" {
				args = append(args, "--group-remote-assignor", o.Assignor)
			}
		} else {
			args = append(args, "--session-timeout", strconv.Itoa(cmpOr(o.SessionTimeoutMS, 10000)),
				"--assignment-strategy", cmpOrS(o.Assignor, "org.apache.kafka.clients.consumer.RangeAssignor"))
		}
		if o.AutoCommit {
			args = append(args, "--enable-autocommit")
		}
		m := &member{idx: i, position: map[TopicPartition]int64{}, committed: map[TopicPartition]int64{}}
		m.proc = proc{name: fmt.Sprintf("%s-%d", name, i), tools: tl, class: "org.apache.kafka.tools.VerifiableConsumer",
			args: args, handle: func(_ string, ev map[string]any) { c.handle(m, ev) }, log4j: log4j}
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.start(t)
	}
	return c
}

func cmpOrS(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (c *Consumers) eager() bool {
	return c.o.Protocol != "consumer" && c.o.Assignor != "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
}

func (c *Consumers) anomaly(format string, args ...any) {
	if len(c.anomalies) < 50 {
		c.anomalies = append(c.anomalies, fmt.Sprintf(format, args...))
	}
}

// handle is VerifiableConsumer._worker's dispatch with the handler kinds of
// verifiable_consumer.py (eager, incremental, consumer protocol).
func (c *Consumers) handle(m *member, ev map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch str(ev, "name") {
	case "startup_complete":
		m.state = stateStarted
	case "shutdown_complete":
		m.state, m.assignment, m.position = stateDead, nil, map[TopicPartition]int64{}
		m.shutdowns++
	case "partitions_revoked":
		m.revoked++
		m.position = map[TopicPartition]int64{}
		if c.o.Protocol != "consumer" {
			m.state = stateRebalancing
		}
		if c.eager() {
			return
		}
		for _, p := range partitionsOf(ev) {
			i := slices.Index(m.assignment, p)
			if i < 0 {
				if c.o.Protocol != "consumer" {
					c.anomaly("member %d: partition %v revoked but not assigned (assignment %v)", m.idx, p, m.assignment)
				}
				continue
			}
			m.assignment = slices.Delete(m.assignment, i, i+1)
		}
	case "partitions_assigned":
		m.assigned++
		m.state = stateJoined
		if c.eager() {
			m.assignment = partitionsOf(ev)
		} else {
			m.assignment = append(m.assignment, partitionsOf(ev)...)
		}
	case "records_consumed":
		if m.state != stateJoined {
			c.anomaly("member %d: records consumed while not joined (state %d)", m.idx, m.state)
		}
		parts, _ := ev["partitions"].([]any)
		for _, x := range parts {
			pm, _ := x.(map[string]any)
			tp := tpOf(pm)
			minOff, maxOff := num(pm, "minOffset"), num(pm, "maxOffset")
			if !slices.Contains(m.assignment, tp) {
				c.anomaly("member %d: consumed records of %v, which is not assigned (assignment %v)", m.idx, tp, m.assignment)
			}
			if pos, ok := m.position[tp]; !ok || pos == minOff {
				m.position[tp] = maxOff + 1
			} else {
				if !c.o.LooseOffsets {
					c.anomaly("member %d: consumed %v from an unexpected offset %d (position %d)", m.idx, tp, minOff, pos)
				}
				m.position[tp] = maxOff + 1
			}
			// _update_global_position
			if com, ok := c.globalCommit[tp]; ok && com > minOff && !c.o.LooseOffsets {
				c.anomaly("consumed position %d of %v is behind the committed offset %d", minOff, tp, com)
			}
			if gp, ok := c.globalPosition[tp]; ok && gp != minOff {
				c.warnings++
			}
			c.globalPosition[tp] = maxOff + 1
		}
		m.consumed += num(ev, "count")
	case "record_data":
		v, err := strconv.ParseInt(str(ev, "value"), 10, 64)
		if err != nil {
			c.anomaly("record with a non-integer value %q", str(ev, "value"))
			return
		}
		c.values = append(c.values, v)
		c.recordsAt[tpOf(ev)] = num(ev, "offset")
	case "offsets_committed":
		if ok, _ := ev["success"].(bool); !ok {
			return
		}
		offs, _ := ev["offsets"].([]any)
		for _, x := range offs {
			om, _ := x.(map[string]any)
			if str(om, "error") != "" {
				continue
			}
			tp, off := tpOf(om), num(om, "offset")
			if !slices.Contains(m.assignment, tp) {
				c.anomaly("member %d: committed %v, which is not assigned (assignment %v)", m.idx, tp, m.assignment)
			}
			if pos, ok := m.position[tp]; !ok || pos < off {
				c.anomaly("member %d: committed offset %d of %v is ahead of its position %d", m.idx, off, tp, pos)
			}
			m.committed[tp] = off
			if gp := c.globalPosition[tp]; gp < off {
				c.anomaly("committed offset %d of %v is ahead of the group's position %d", off, tp, gp)
			}
			c.globalCommit[tp] = off
		}
	}
}

func partitionsOf(ev map[string]any) []TopicPartition {
	parts, _ := ev["partitions"].([]any)
	var out []TopicPartition
	for _, x := range parts {
		pm, _ := x.(map[string]any)
		out = append(out, tpOf(pm))
	}
	return out
}

// Group is the consumers' group id.
func (c *Consumers) Group() string { return c.o.Group }

// Members is the number of consumer processes.
func (c *Consumers) Members() int { return len(c.members) }

// StopMember ends member i (0-based) with SIGTERM (clean) or SIGKILL and
// waits for it; a killed member is marked dead, as handle_kill_process does.
func (c *Consumers) StopMember(t testing.TB, i int, clean bool) {
	t.Helper()
	m := c.members[i]
	m.stop(t, clean)
	if !clean {
		c.mu.Lock()
		m.state, m.assignment, m.position = stateDead, nil, map[TopicPartition]int64{}
		c.mu.Unlock()
	}
}

// Stderr returns what member i (0-based) wrote to stderr over all its runs.
func (c *Consumers) Stderr(i int) string { return c.members[i].stderr() }

// StartMember starts member i again.
func (c *Consumers) StartMember(t testing.TB, i int) { c.members[i].start(t) }

// StopAll stops every running member cleanly (SIGTERM to all, then waits).
func (c *Consumers) StopAll(t testing.TB) {
	t.Helper()
	for _, m := range c.members {
		m.signal(syscall.SIGTERM)
	}
	for _, m := range c.members {
		m.wait(t, ToolStopTimeout)
	}
}

// Joined is the number of members in the Joined state.
func (c *Consumers) Joined() int { return c.inState(stateJoined) }

// Rebalances lists each member's partitions_assigned and
// partitions_revoked counts, for a failure message.
func (c *Consumers) Rebalances() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.members {
		out = append(out, fmt.Sprintf("member %d: %d assigned, %d revoked", m.idx, m.assigned, m.revoked))
	}
	return strings.Join(out, "; ")
}

// Dead is the number of members in the Dead state.
func (c *Consumers) Dead() int { return c.inState(stateDead) }

// inState is the number of members in state st.
func (c *Consumers) inState(st memberState) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.members {
		if m.state == st {
			n++
		}
	}
	return n
}

// TotalConsumed is the sum of the members' consumed counts.
func (c *Consumers) TotalConsumed() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, m := range c.members {
		n += m.consumed
	}
	return n
}

// NumRebalances is the highest assignment count of a member.
func (c *Consumers) NumRebalances() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.members {
		n = max(n, m.assigned)
	}
	return n
}

// RevokesOfFirst is the highest revocation count among the first keep
// members (num_revokes_for_alive).
func (c *Consumers) RevokesOfFirst(keep int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.members[:keep] {
		n = max(n, m.revoked)
	}
	return n
}

// Assignment returns the union of the members' assignments.
func (c *Consumers) Assignment() []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TopicPartition
	for _, m := range c.members {
		out = append(out, m.assignment...)
	}
	return out
}

// Position is the group's consumed position of tp (-1 if none).
func (c *Consumers) Position(tp TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.globalPosition[tp]; ok {
		return p
	}
	return -1
}

// LastCommit is the group's last committed offset of tp (-1 if none).
func (c *Consumers) LastCommit(tp TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.globalCommit[tp]; ok {
		return p
	}
	return -1
}

// ConsumedValues returns the values of every record_data event (Verbose).
func (c *Consumers) ConsumedValues() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.values...)
}

// LastRecordOffset returns the offset of the last record_data of tp (-1).
func (c *Consumers) LastRecordOffset(tp TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.recordsAt[tp]; ok {
		return p
	}
	return -1
}

// Anomalies returns the violated expectations of verifiable_consumer.py's
// event handlers (the Python service raises on them).
func (c *Consumers) Anomalies() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.anomalies...)
}
