package coordinator

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupHeartbeat status codes (KIP-1071).
const (
	streamsStatusStaleTopology         int8 = 0
	streamsStatusMissingSourceTopics   int8 = 1
	streamsStatusIncorrectlyPartitions int8 = 2
	streamsStatusMissingInternalTopics int8 = 3
	streamsStatusShutdownApplication   int8 = 4
	streamsStatusAssignmentDelayed     int8 = 5
)

// StreamsInternalTopic is a repartition or changelog topic a streams
// group needs and the cluster does not have: the broker creates it, as
// Kafka 4.4's does (its KafkaApis hands the group coordinator's list to
// its AutoTopicCreationManager), with the configs the client sent and its
// replication factor, or the broker default when that is 0.
type StreamsInternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // -1: the broker's default
	Configs           map[string]string
}

// configuredTopology is a streams topology resolved against the cluster's
// topics: the number of tasks of each subtopology and the partition count
// of every internal topic, or why it cannot be used yet.
type configuredTopology struct {
	tasks      map[string]int32 // by subtopology id; nil unless ready
	stateful   map[string]bool  // subtopologies with changelog topics
	sources    map[string][]string
	partitions map[string]int32 // every source and internal topic
	status     int8             // -1: none
	detail     string
	missing    []StreamsInternalTopic
}

func (c *configuredTopology) ready() bool { return c != nil && c.tasks != nil }

// configureTopology resolves topo against img as Kafka's
// InternalTopicManager.configureTopics: every source topic must exist
// (MISSING_SOURCE_TOPICS); repartition topics get their explicit partition
// count or that of the subtopologies writing to them; copartitioned source
// topics must have equal counts (INCORRECTLY_PARTITIONED_TOPICS) and
// copartitioned repartition topics take it; a subtopology has as many
// tasks as its largest input topic, its changelogs as many partitions;
// internal topics that do not exist are returned to be created
// (MISSING_INTERNAL_TOPICS), existing ones must have the right count.
func configureTopology(topo *kmsg.StreamsGroupHeartbeatRequestTopology, img TopicImage) *configuredTopology {
	out := &configuredTopology{status: -1, partitions: map[string]int32{}, sources: map[string][]string{}, stateful: map[string]bool{}}
	if topo == nil {
		return out
	}
	fail := func(code int8, detail string) *configuredTopology {
		out.status, out.detail, out.tasks = code, detail, nil
		return out
	}
	var all []string
	var missing []string
	for _, st := range topo.Subtopologies {
		srcs := slices.Clone(st.SourceTopics)
		if len(st.SourceTopicRegex) > 0 {
			if all == nil {
				all = img.TopicNames()
			}
			for _, expr := range st.SourceTopicRegex {
				re, err := regexp.Compile("^(?:" + expr + ")$")
				if err != nil {
					continue
				}
				for _, n := range all {
					if re.MatchString(n) && !strings.HasPrefix(n, "__") {
						srcs = append(srcs, n)
					}
				}
			}
		}
		slices.Sort(srcs)
		srcs = slices.Compact(srcs)
		out.sources[st.SubtopologyID] = srcs
		for _, n := range st.SourceTopics {
			if _, parts, ok := img.TopicByName(n); ok && parts > 0 {
				out.partitions[n] = parts
			} else if !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
		}
		for _, n := range srcs {
			if _, parts, ok := img.TopicByName(n); ok {
				out.partitions[n] = parts
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fail(streamsStatusMissingSourceTopics, "Source topics "+strings.Join(missing, ", ")+" are missing.")
	}
	// Repartition topics: explicit counts, then from their writers.
	explicit := map[string]bool{}
	repart := map[string]kmsg.TopicInfo{}
	for _, st := range topo.Subtopologies {
		for _, t := range st.RepartitionSourceTopics {
			repart[t.Topic] = t
			if t.NumPartitions > 0 {
				out.partitions[t.Topic] = t.NumPartitions
				explicit[t.Topic] = true
			}
		}
	}
	inputs := func(st *kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) (int32, bool) {
		var n int32
		for _, s := range out.sources[st.SubtopologyID] {
			n = max(n, out.partitions[s])
		}
		for _, t := range st.RepartitionSourceTopics {
			p, ok := out.partitions[t.Topic]
			if !ok {
				return 0, false
			}
			n = max(n, p)
		}
		return n, true
	}
	for range len(topo.Subtopologies) + 1 {
		changed := false
		for name := range repart {
			if _, ok := out.partitions[name]; ok {
				continue
			}
			var n int32
			known := true
			writers := 0
			for i := range topo.Subtopologies {
				st := &topo.Subtopologies[i]
				if !slices.Contains(st.RepartitionSinkTopics, name) {
					continue
				}
				writers++
				c, ok := inputs(st)
				if !ok {
					known = false
					break
				}
				n = max(n, c)
			}
			if known && writers > 0 && n > 0 {
				out.partitions[name] = n
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for name := range repart {
		if _, ok := out.partitions[name]; !ok {
			return fail(streamsStatusIncorrectlyPartitions, "Failed to compute the number of partitions of repartition topic "+name+".")
		}
	}
	// Copartition groups.
	for _, st := range topo.Subtopologies {
		for _, cg := range st.CopartitionGroups {
			var srcNames, repNames []string
			for _, i := range cg.SourceTopics {
				if int(i) >= 0 && int(i) < len(st.SourceTopics) {
					srcNames = append(srcNames, st.SourceTopics[i])
				}
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) >= 0 && int(i) < len(st.RepartitionSourceTopics) {
					repNames = append(repNames, st.RepartitionSourceTopics[i].Topic)
				}
			}
			var want int32 = -1
			for _, n := range srcNames {
				if want >= 0 && out.partitions[n] != want {
					names := slices.Sorted(slices.Values(srcNames))
					var parts []string
					for _, m := range names {
						parts = append(parts, fmt.Sprintf("%s:%d", m, out.partitions[m]))
					}
					return fail(streamsStatusIncorrectlyPartitions, "Following topics do not have the same number of partitions: ["+strings.Join(parts, ", ")+"]")
				}
				want = out.partitions[n]
			}
			if want < 0 {
				for _, n := range repNames {
					want = max(want, out.partitions[n])
				}
			}
			for _, n := range repNames {
				if explicit[n] {
					if out.partitions[n] != want {
						return fail(streamsStatusIncorrectlyPartitions, fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", out.partitions[n], n, want))
					}
					continue
				}
				out.partitions[n] = want
			}
		}
	}
	tasks := map[string]int32{}
	for i := range topo.Subtopologies {
		st := &topo.Subtopologies[i]
		n, _ := inputs(st)
		if n <= 0 {
			return fail(streamsStatusMissingSourceTopics, "Subtopology "+st.SubtopologyID+" has no source topic partitions.")
		}
		tasks[st.SubtopologyID] = n
		if len(st.StateChangelogTopics) > 0 {
			out.stateful[st.SubtopologyID] = true
		}
		for _, t := range st.StateChangelogTopics {
			out.partitions[t.Topic] = n
		}
	}
	// Internal topics against the cluster.
	var wrong []string
	need := func(t kmsg.TopicInfo) {
		want := out.partitions[t.Topic]
		if _, parts, ok := img.TopicByName(t.Topic); ok {
			if parts != want {
				wrong = append(wrong, fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d.", t.Topic, want, parts))
			}
			return
		}
		for _, m := range out.missing {
			if m.Name == t.Topic {
				return
			}
		}
		it := StreamsInternalTopic{Name: t.Topic, Partitions: want, ReplicationFactor: -1, Configs: map[string]string{}}
		if t.ReplicationFactor != 0 {
			it.ReplicationFactor = t.ReplicationFactor
		}
		for _, c := range t.Configs {
			it.Configs[c.Key] = c.Value
		}
		out.missing = append(out.missing, it)
	}
	for _, st := range topo.Subtopologies {
		for _, t := range st.RepartitionSourceTopics {
			need(t)
		}
		for _, t := range st.StateChangelogTopics {
			need(t)
		}
	}
	if len(wrong) > 0 {
		out.missing = nil
		return fail(streamsStatusIncorrectlyPartitions, strings.Join(wrong, " "))
	}
	if len(out.missing) > 0 {
		var names []string
		for _, m := range out.missing {
			names = append(names, m.Name)
		}
		out.status, out.detail = streamsStatusMissingInternalTopics, "Internal topics are missing: "+strings.Join(javaHashOrder(names), ", ")
		return out
	}
	out.tasks = tasks
	return out
}

// sameTasks tells whether two configured topologies have the same tasks.
func sameTasks(a, b *configuredTopology) bool {
	var ta, tb map[string]int32
	if a != nil {
		ta = a.tasks
	}
	if b != nil {
		tb = b.tasks
	}
	return (ta == nil) == (tb == nil) && maps.Equal(ta, tb)
}

// javaHashOrder returns names in the iteration order of a java.util.HashMap
// they were put in (in this order): Kafka 4.4 lists missing internal
// topics from one, so the status detail reads the same.
func javaHashOrder(names []string) []string { return javaHashMapOrder(names, 0) }

// javaHashMapOrder returns keys in the iteration order of a java.util.HashMap
// they were put in (Map.put), in this order, made with new
// HashMap<>(initialCapacity) (0: new HashMap<>()).
func javaHashMapOrder(keys []string, initialCapacity int) []string {
	m := newJavaHashMap(initialCapacity)
	for _, k := range keys {
		m.put(k)
	}
	return m.keys()
}

// javaHashMap is the key order of a java.util.HashMap of distinct String
// keys: a table of buckets (the spread String.hashCode modulo the table
// size: 16 by default, else the power of two at or above the initial
// capacity, doubled when the map holds more than three quarters of it, the
// threshold in float as Java's), iterated bucket by bucket. put appends to
// its bucket and resizes after inserting; computeIfAbsent puts a new key at
// the head of its bucket and resizes before inserting; a resize keeps each
// bucket's order.
type javaHashMap struct {
	table     [][]string
	size      int
	threshold int
}

func newJavaHashMap(initialCapacity int) *javaHashMap {
	m := &javaHashMap{}
	if initialCapacity > 0 {
		m.threshold = 1
		for m.threshold < initialCapacity {
			m.threshold *= 2
		}
	}
	return m
}

func (m *javaHashMap) bucket(k string, n int) int {
	u := uint32(javaStringHash(k))
	return int((u ^ u>>16) & uint32(n-1))
}

func (m *javaHashMap) resize() {
	oldCap := len(m.table)
	var newCap, newThr int
	switch {
	case oldCap > 0:
		newCap = oldCap * 2
		if oldCap >= 16 {
			newThr = m.threshold * 2
		}
	case m.threshold > 0:
		newCap = m.threshold
	default:
		newCap, newThr = 16, 12
	}
	if newThr == 0 {
		newThr = int(float32(newCap) * 0.75)
	}
	table := make([][]string, newCap)
	for _, b := range m.table {
		for _, k := range b {
			i := m.bucket(k, newCap)
			table[i] = append(table[i], k)
		}
	}
	m.table, m.threshold = table, newThr
}

func (m *javaHashMap) put(k string) {
	if m.table == nil {
		m.resize()
	}
	i := m.bucket(k, len(m.table))
	if slices.Contains(m.table[i], k) {
		return // a new value for a key keeps its place
	}
	m.table[i] = append(m.table[i], k)
	m.size++
	if m.size > m.threshold {
		m.resize()
	}
}

func (m *javaHashMap) computeIfAbsent(k string) {
	if m.size > m.threshold || m.table == nil {
		m.resize()
	}
	i := m.bucket(k, len(m.table))
	if slices.Contains(m.table[i], k) {
		return
	}
	m.table[i] = append([]string{k}, m.table[i]...)
	m.size++
}

func (m *javaHashMap) keys() []string {
	out := make([]string, 0, m.size)
	for _, b := range m.table {
		out = append(out, b...)
	}
	return out
}
