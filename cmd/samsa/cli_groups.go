package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runGroups is `samsa groups list|describe|reset-offsets|delete`.
func runGroups(c *cli, args []string) error {
	return runActions(c, args, groupsUsage, []action{
		{"list", groupsList}, {"describe", groupsDescribe}, {"reset-offsets", groupsResetOffsets}, {"delete", groupsDelete},
	})
}

const groupsUsage = `Usage: samsa groups <action> [flags]

  list
  describe GROUP...                  members, committed offsets, log end offsets and lag
  reset-offsets GROUP (--topic T[:P,P...]... | --all-topics)
                (--to-earliest | --to-latest | --to-offset N | --to-datetime TIME | --shift-by N) [--execute]
                                     without --execute only shows the new offsets (dry run)
  delete GROUP...
`

type groupJSON struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Type         string `json:"type,omitempty"`
	Coordinator  int32  `json:"coordinator"`
}

func groupsList(c *cli, args []string) error {
	fs, co := c.flagSet("groups list", "[flags]")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	out := []groupJSON{}
	t := newTable(c.stdout, "GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
	for _, g := range groups.Sorted() {
		out = append(out, groupJSON{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Type: g.GroupType, Coordinator: g.Coordinator})
		t.row(g.Group, g.State, dash(g.ProtocolType), g.Coordinator)
	}
	if co.format == "json" {
		return writeJSON(c.stdout, out)
	}
	return t.flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type memberJSON struct {
	MemberID   string `json:"member_id"`
	InstanceID string `json:"instance_id,omitempty"`
	ClientID   string `json:"client_id"`
	Host       string `json:"host"`
}

type offsetJSON struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	LogEndOffset  int64  `json:"log_end_offset"`
	Lag           int64  `json:"lag"`
	MemberID      string `json:"member_id,omitempty"`
	Error         string `json:"error,omitempty"`
}

type groupDescJSON struct {
	groupJSON
	Protocol string       `json:"protocol"`
	Members  []memberJSON `json:"members"`
	Offsets  []offsetJSON `json:"offsets"`
	Error    string       `json:"error,omitempty"`
}

func groupsDescribe(c *cli, args []string) error {
	fs, co := c.flagSet("groups describe", "GROUP... [flags]")
	flagGroups := fs.StringArray("group", nil, "group (repeatable; or give groups as arguments)")
	names, err := parseNames(fs, co, args, flagGroups, "group")
	if err != nil {
		return err
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return err
	}
	var out []groupDescJSON
	var failed []string
	for _, name := range names {
		l, ok := lags[name]
		d := groupDescJSON{groupJSON: groupJSON{Group: name}, Members: []memberJSON{}, Offsets: []offsetJSON{}}
		if !ok {
			d.Error = "no answer for this group"
		} else {
			d.State, d.ProtocolType, d.Protocol, d.Coordinator = l.State, l.ProtocolType, l.Protocol, l.Coordinator.NodeID
			if err := l.Error(); err != nil {
				d.Error = err.Error()
			}
			for _, m := range l.Members {
				mj := memberJSON{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
				if m.InstanceID != nil {
					mj.InstanceID = *m.InstanceID
				}
				d.Members = append(d.Members, mj)
			}
			for _, ml := range l.Lag.Sorted() {
				o := offsetJSON{Topic: ml.Topic, Partition: ml.Partition, CurrentOffset: ml.Commit.At, LogEndOffset: ml.End.Offset, Lag: ml.Lag}
				if ml.Member != nil {
					o.MemberID = ml.Member.MemberID
				}
				if ml.Err != nil {
					o.Error = ml.Err.Error()
				}
				d.Offsets = append(d.Offsets, o)
			}
			if d.Error == "" && (d.State == "Dead" || d.State == "") && len(d.Offsets) == 0 && len(d.Members) == 0 {
				d.Error = kerr.GroupIDNotFound.Error()
			}
		}
		if d.Error != "" {
			failed = append(failed, name+": "+d.Error)
		}
		out = append(out, d)
	}
	if co.format == "json" {
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
		return failures("cannot describe group", failed)
	}
	t := newTable(c.stdout, "GROUP", "STATE", "PROTOCOL", "MEMBERS", "COORDINATOR")
	for _, d := range out {
		if d.Error == "" {
			t.row(d.Group, d.State, dash(d.Protocol), len(d.Members), d.Coordinator)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	t = newTable(c.stdout, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST")
	for _, d := range out {
		clients := map[string]memberJSON{}
		for _, m := range d.Members {
			clients[m.MemberID] = m
		}
		for _, o := range d.Offsets {
			m := clients[o.MemberID]
			t.row(d.Group, o.Topic, o.Partition, offsetText(o.CurrentOffset), offsetText(o.LogEndOffset), offsetText(o.Lag),
				dash(o.MemberID), dash(m.ClientID), dash(m.Host))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return failures("cannot describe group", failed)
}

func offsetText(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// resetSpec is one way of choosing new offsets.
type resetSpec struct {
	toEarliest, toLatest bool
	toOffset, shiftBy    int64
	toDatetime           string
	hasOffset, hasShift  bool
}

func groupsResetOffsets(c *cli, args []string) error {
	fs, co := c.flagSet("groups reset-offsets", "GROUP (--topic T[:P,...]... | --all-topics) (--to-earliest | --to-latest | --to-offset N | --to-datetime TIME | --shift-by N) [--execute]")
	topicFlags := fs.StringArray("topic", nil, "topic, or topic:partition,partition (repeatable)")
	allTopics := fs.Bool("all-topics", false, "every topic the group has committed offsets for")
	var spec resetSpec
	fs.BoolVar(&spec.toEarliest, "to-earliest", false, "reset to the log start offset")
	fs.BoolVar(&spec.toLatest, "to-latest", false, "reset to the log end offset")
	fs.Int64Var(&spec.toOffset, "to-offset", 0, "reset to this offset (kept within the log)")
	fs.StringVar(&spec.toDatetime, "to-datetime", "", "reset to the first offset at or after this time (RFC 3339, or Unix milliseconds)")
	fs.Int64Var(&spec.shiftBy, "shift-by", 0, "move the committed offset by N (negative: back)")
	execute := fs.Bool("execute", false, "commit the new offsets (without it, only show them)")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	spec.hasOffset, spec.hasShift = fs.Changed("to-offset"), fs.Changed("shift-by")
	n := 0
	for _, b := range []bool{spec.toEarliest, spec.toLatest, spec.hasOffset, spec.toDatetime != "", spec.hasShift} {
		if b {
			n++
		}
	}
	if n != 1 {
		return usagef("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
	}
	if fs.NArg() != 1 {
		return usagef("give exactly one group")
	}
	group := fs.Arg(0)
	if (len(*topicFlags) == 0) == !*allTopics {
		return usagef("give --topic or --all-topics")
	}
	var millis int64
	if spec.toDatetime != "" {
		ms, err := parseTime(spec.toDatetime)
		if err != nil {
			return usagef("--to-datetime: %v", err)
		}
		millis = ms
	}
	wanted := map[string][]int32{} // topic -> partitions (nil: all)
	for _, tf := range *topicFlags {
		topic, parts, hasParts := strings.Cut(tf, ":")
		if topic == "" {
			return usagef("--topic %q: empty topic", tf)
		}
		if !hasParts {
			wanted[topic] = nil
			continue
		}
		for _, p := range strings.Split(parts, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return usagef("--topic %q: bad partition %q", tf, p)
			}
			wanted[topic] = append(wanted[topic], int32(n))
		}
	}

	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	if *allTopics {
		committed.Each(func(o kadm.OffsetResponse) { wanted[o.Topic] = append(wanted[o.Topic], o.Partition) })
		if len(wanted) == 0 {
			return fmt.Errorf("group %s has no committed offsets", group)
		}
	}
	topics := make([]string, 0, len(wanted))
	for t := range wanted {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	var after kadm.ListedOffsets
	if spec.toDatetime != "" {
		if after, err = adm.ListOffsetsAfterMilli(ctx, millis, topics...); err != nil {
			return err
		}
	}
	type plan struct {
		topic       string
		partition   int32
		current, to int64
	}
	var plans []plan
	newOffsets := kadm.Offsets{}
	for _, topic := range topics {
		parts := wanted[topic]
		if parts == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Topic == topic {
					parts = append(parts, o.Partition)
				}
			})
			if len(parts) == 0 {
				return fmt.Errorf("topic %s: %w", topic, kerr.UnknownTopicOrPartition)
			}
		}
		slices32(parts)
		for _, p := range parts {
			start, okS := starts.Lookup(topic, p)
			end, okE := ends.Lookup(topic, p)
			if !okS || !okE || start.Err != nil || end.Err != nil {
				return fmt.Errorf("%s-%d: %w", topic, p, firstErr(start.Err, end.Err, kerr.UnknownTopicOrPartition))
			}
			current := int64(-1)
			if o, ok := committed.Lookup(topic, p); ok && o.Err == nil {
				current = o.At
			}
			var to int64
			switch {
			case spec.toEarliest:
				to = start.Offset
			case spec.toLatest:
				to = end.Offset
			case spec.hasOffset:
				to = spec.toOffset
			case spec.hasShift:
				if current < 0 {
					return fmt.Errorf("%s-%d: group %s has no committed offset to shift", topic, p, group)
				}
				to = current + spec.shiftBy
			default:
				to = end.Offset
				if a, ok := after.Lookup(topic, p); ok && a.Err == nil && a.Offset >= 0 {
					to = a.Offset
				}
			}
			to = min(max(to, start.Offset), end.Offset)
			plans = append(plans, plan{topic, p, current, to})
			newOffsets.AddOffset(topic, p, to, -1)
		}
	}
	if *execute {
		// Kafka's rule: offsets are reset only while no member consumes.
		groups, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		if g, ok := groups[group]; ok && g.Err == nil && g.State != "Empty" && g.State != "Dead" && g.State != "" {
			return fmt.Errorf("offsets of group %s can be reset only while it is inactive; it is %s", group, g.State)
		}
		resps, err := adm.CommitOffsets(ctx, group, newOffsets)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("committing offsets of group %s: %w", group, err)
		}
	}
	type planJSON struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Current   int64  `json:"current_offset"`
		New       int64  `json:"new_offset"`
	}
	if co.format == "json" {
		out := []planJSON{}
		for _, p := range plans {
			out = append(out, planJSON{p.topic, p.partition, p.current, p.to})
		}
		return writeJSON(c.stdout, map[string]any{"group": group, "executed": *execute, "offsets": out})
	}
	t := newTable(c.stdout, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET")
	for _, p := range plans {
		t.row(group, p.topic, p.partition, offsetText(p.current), p.to)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if !*execute {
		fmt.Fprintln(c.stderr, "samsa: dry run; add --execute to commit these offsets")
	}
	return nil
}

func slices32(s []int32) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// parseTime reads RFC 3339 (with or without seconds' fraction or zone) or
// Unix milliseconds.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, errors.New("want RFC 3339 (2026-12-04T15:04:05Z) or Unix milliseconds")
}

func groupsDelete(c *cli, args []string) error {
	fs, co := c.flagSet("groups delete", "GROUP... [flags]")
	flagGroups := fs.StringArray("group", nil, "group (repeatable; or give groups as arguments)")
	names, err := parseNames(fs, co, args, flagGroups, "group")
	if err != nil {
		return err
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.DeleteGroups(ctx, names...)
	if err != nil {
		return err
	}
	var rs []result
	for _, name := range names {
		res := result{Name: name}
		if r, ok := resps[name]; !ok {
			res.Error = "no answer for this group"
		} else if r.Err != nil {
			res.Error = errText(r.Err, r.ErrMessage)
		}
		rs = append(rs, res)
	}
	return reportResults(c, co, "deleted", rs)
}
