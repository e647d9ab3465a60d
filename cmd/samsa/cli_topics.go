package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runTopics is `samsa topics create|list|describe|alter-configs|delete`.
func runTopics(c *cli, args []string) error {
	return runActions(c, args, topicsUsage, []action{
		{"create", topicsCreate}, {"list", topicsList}, {"describe", topicsDescribe},
		{"alter-configs", topicsAlterConfigs}, {"delete", topicsDelete},
	})
}

// action is one action of a subcommand (`samsa topics create`).
type action struct {
	name string
	run  func(*cli, []string) error
}

// runActions runs the action args[0] names with the rest of args; -h or
// --help prints usage.
func runActions(c *cli, args []string, usage string, actions []action) error {
	names := make([]string, len(actions))
	for i, a := range actions {
		names[i] = a.name
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(c.stderr, usage)
			return nil
		}
		return usagef("missing action: %s", want)
	}
	for _, a := range actions {
		if a.name == args[0] {
			return a.run(c, args[1:])
		}
	}
	return usagef("unknown action %q: want %s", args[0], want)
}

const topicsUsage = `Usage: samsa topics <action> [flags]

  create NAME... [--partitions N] [--replication-factor N] [--config k=v]... [--if-not-exists]
  list [--internal]
  describe [NAME...]                 partitions, leaders, replicas, ISR and configs set on the topic
  alter-configs NAME --set k=v... --delete k...
  delete NAME... [--if-exists]
`

// topicNames joins positional names and --topic flags.
func topicNames(positional, flagged []string) []string {
	return append(append([]string(nil), positional...), flagged...)
}

type topicJSON struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"`
	Internal          bool              `json:"internal"`
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	PartitionDetails  []partitionJSON   `json:"partition_details,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
}

type partitionJSON struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline_replicas"`
	Error       string  `json:"error,omitempty"`
}

func topicsCreate(c *cli, args []string) error {
	fs, co := c.flagSet("topics create", "NAME... [flags]")
	partitions := fs.Int32P("partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	rf := fs.Int16P("replication-factor", "r", -1, "replication factor (-1: the broker's default.replication.factor)")
	configs := fs.StringArrayP("config", "c", nil, "topic setting key=value (repeatable)")
	flagTopics := fs.StringArray("topic", nil, "topic name (repeatable; or give names as arguments)")
	ifNotExists := fs.Bool("if-not-exists", false, "succeed when the topic exists already")
	names, err := parseNames(fs, co, args, flagTopics, "topic name")
	if err != nil {
		return err
	}
	kv, err := keyValues("config", *configs)
	if err != nil {
		return err
	}
	cfg := map[string]*string{}
	for k, v := range kv {
		cfg[k] = &v
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.CreateTopics(ctx, *partitions, *rf, cfg, names...)
	if err != nil {
		return err
	}
	var out []topicJSON
	var failed []string
	t := newTable(c.stdout, "TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR", "RESULT")
	for _, name := range names {
		r := resps[name]
		result := "created"
		switch {
		case errors.Is(r.Err, kerr.TopicAlreadyExists) && *ifNotExists:
			result = "exists"
		case r.Err != nil:
			result = errText(r.Err, r.ErrMessage)
			failed = append(failed, name+": "+result)
		}
		out = append(out, topicJSON{Name: name, ID: topicID(r.ID), Partitions: int(r.NumPartitions), ReplicationFactor: int(r.ReplicationFactor)})
		t.row(name, topicID(r.ID), r.NumPartitions, r.ReplicationFactor, result)
	}
	if co.format == "json" {
		if err := writeJSON(c.stdout, map[string]any{"created": out, "errors": failed}); err != nil {
			return err
		}
	} else if err := t.flush(); err != nil {
		return err
	}
	return failures("could not create", failed)
}

// failures is an error listing what failed, nil when nothing did.
func failures(what string, failed []string) error {
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s", what, strings.Join(failed, "; "))
}

// errText is a Kafka error's name with the broker's message, if any.
func errText(err error, msg string) string {
	if msg != "" && !strings.Contains(err.Error(), msg) {
		return err.Error() + ": " + msg
	}
	return err.Error()
}

func topicsList(c *cli, args []string) error {
	fs, co := c.flagSet("topics list", "[flags]")
	internal := fs.Bool("internal", false, "include internal topics (__consumer_offsets, ...)")
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
	var details kadm.TopicDetails
	if *internal {
		details, err = adm.ListTopicsWithInternal(ctx)
	} else {
		details, err = adm.ListTopics(ctx)
	}
	if err != nil {
		return err
	}
	var out []topicJSON
	t := newTable(c.stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR", "ID")
	for _, d := range details.Sorted() {
		if d.Err != nil {
			return fmt.Errorf("topic %s: %w", d.Topic, d.Err)
		}
		j := topicJSON{Name: d.Topic, ID: topicID(d.ID), Internal: d.IsInternal, Partitions: len(d.Partitions), ReplicationFactor: d.Partitions.NumReplicas()}
		out = append(out, j)
		t.row(j.Name, j.Partitions, j.ReplicationFactor, j.ID)
	}
	if co.format == "json" {
		if out == nil {
			out = []topicJSON{}
		}
		return writeJSON(c.stdout, out)
	}
	return t.flush()
}

func topicsDescribe(c *cli, args []string) error {
	fs, co := c.flagSet("topics describe", "[NAME...] [flags]")
	flagTopics := fs.StringArray("topic", nil, "topic name (repeatable; or give names as arguments; none: every topic)")
	if err := parse(fs, co, args); err != nil {
		return err
	}
	names := topicNames(fs.Args(), *flagTopics)
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	details, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		for _, d := range details.Sorted() {
			if !d.IsInternal {
				names = append(names, d.Topic)
			}
		}
	}
	var found []string
	var failed []string
	for _, n := range names {
		d, ok := details[n]
		if !ok || d.Err != nil {
			e := error(kerr.UnknownTopicOrPartition)
			if ok {
				e = d.Err
			}
			failed = append(failed, n+": "+e.Error())
			continue
		}
		found = append(found, n)
	}
	configs := map[string]map[string]string{}
	if len(found) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, found...)
		if err != nil {
			return err
		}
		for _, rc := range rcs {
			m := map[string]string{}
			for _, cf := range rc.Configs {
				if cf.Source == kmsg.ConfigSourceDynamicTopicConfig && cf.Value != nil {
					m[cf.Key] = *cf.Value
				}
			}
			configs[rc.Name] = m
		}
	}
	var out []topicJSON
	for _, n := range found {
		d := details[n]
		j := topicJSON{Name: n, ID: topicID(d.ID), Internal: d.IsInternal, Partitions: len(d.Partitions),
			ReplicationFactor: d.Partitions.NumReplicas(), Configs: configs[n]}
		for _, p := range d.Partitions.Sorted() {
			pj := partitionJSON{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), Offline: nonNil(p.OfflineReplicas)}
			if p.Err != nil {
				pj.Error = p.Err.Error()
			}
			j.PartitionDetails = append(j.PartitionDetails, pj)
		}
		out = append(out, j)
	}
	if co.format == "json" {
		if out == nil {
			out = []topicJSON{}
		}
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
		return failures("cannot describe", failed)
	}
	t := newTable(c.stdout, "TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR", "CONFIGS")
	for _, j := range out {
		t.row(j.Name, j.ID, j.Partitions, j.ReplicationFactor, configList(j.Configs))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(out) > 0 {
		fmt.Fprintln(c.stdout)
		t = newTable(c.stdout, "TOPIC", "PARTITION", "LEADER", "LEADER-EPOCH", "REPLICAS", "ISR", "OFFLINE")
		for _, j := range out {
			for _, p := range j.PartitionDetails {
				t.row(j.Name, p.Partition, p.Leader, p.LeaderEpoch, int32List(p.Replicas), int32List(p.ISR), dash(int32List(p.Offline)))
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return failures("cannot describe", failed)
}

// topicID formats a topic id as Kafka's tools do: URL-safe base64
// without padding.
func topicID(id kadm.TopicID) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func configList(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}

func topicsAlterConfigs(c *cli, args []string) error {
	fs, co := c.flagSet("topics alter-configs", "NAME... --set k=v... --delete k... [flags]")
	set := fs.StringArray("set", nil, "set a topic setting, key=value (repeatable)")
	del := fs.StringArray("delete", nil, "remove a topic setting, back to the broker default (repeatable)")
	flagTopics := fs.StringArray("topic", nil, "topic name (repeatable; or give names as arguments)")
	names, err := parseNames(fs, co, args, flagTopics, "topic name")
	if err != nil {
		return err
	}
	kv, err := keyValues("set", *set)
	if err != nil {
		return err
	}
	if len(kv) == 0 && len(*del) == 0 {
		return usagef("nothing to alter: give --set or --delete")
	}
	var alters []kadm.AlterConfig
	for k, v := range kv {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	for _, k := range *del {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: strings.TrimSpace(k)})
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.AlterTopicConfigs(ctx, alters, names...)
	if err != nil {
		return err
	}
	return reportResults(c, co, "altered", resps2results(resps))
}

// result is the outcome for one named resource of a batch operation.
type result struct {
	Name  string `json:"name"`
	Error string `json:"error,omitempty"`
}

func resps2results(rs kadm.AlterConfigsResponses) []result {
	var out []result
	for _, r := range rs {
		res := result{Name: r.Name}
		if r.Err != nil {
			res.Error = errText(r.Err, r.ErrMessage)
		}
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reportResults prints one row per resource and fails if any failed.
func reportResults(c *cli, co *common, done string, rs []result) error {
	var failed []string
	for _, r := range rs {
		if r.Error != "" {
			failed = append(failed, r.Name+": "+r.Error)
		}
	}
	if co.format == "json" {
		if rs == nil {
			rs = []result{}
		}
		if err := writeJSON(c.stdout, rs); err != nil {
			return err
		}
	} else {
		t := newTable(c.stdout, "NAME", "RESULT")
		for _, r := range rs {
			res := done
			if r.Error != "" {
				res = r.Error
			}
			t.row(r.Name, res)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return errSilentf(c, failed)
	}
	return nil
}

// errSilentf reports failures on stderr and returns errSilent (exit 1).
func errSilentf(c *cli, failed []string) error {
	for _, f := range failed {
		fmt.Fprintln(c.stderr, "samsa:", f)
	}
	return errSilent
}

func topicsDelete(c *cli, args []string) error {
	fs, co := c.flagSet("topics delete", "NAME... [flags]")
	flagTopics := fs.StringArray("topic", nil, "topic name (repeatable; or give names as arguments)")
	ifExists := fs.Bool("if-exists", false, "succeed when a topic does not exist")
	names, err := parseNames(fs, co, args, flagTopics, "topic name")
	if err != nil {
		return err
	}
	adm, ctx, done, err := c.adminSession(co)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.DeleteTopics(ctx, names...)
	if err != nil {
		return err
	}
	var rs []result
	for _, name := range names {
		r, ok := resps[name]
		res := result{Name: name}
		switch {
		case !ok:
			res.Error = "no answer for this topic"
		case errors.Is(r.Err, kerr.UnknownTopicOrPartition) && *ifExists:
		case r.Err != nil:
			res.Error = errText(r.Err, r.ErrMessage)
		}
		rs = append(rs, res)
	}
	return reportResults(c, co, "deleted", rs)
}
