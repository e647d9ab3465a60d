package diff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The randomized differential run (FuzzScript): a seeded generator picks
// an API both brokers serve, a version both advertise, and fills the
// request's fields from domains of interesting values (existing, missing,
// internal and invalid topics; known, stale and unknown topic ids;
// partitions -1, 0 and beyond the count; empty, long and null strings;
// negative and huge numbers; duplicate entries; unknown groups, members,
// producers and transactional ids; valid and invalid configs; unknown
// tagged fields). Its steps also change state (create and delete topics,
// produce, commit, join groups, begin and end transactions), so later
// requests meet it. Both sessions draw from generators seeded alike and
// never branch on an answer before a draw, so they send the same sequence;
// what each learns from its own broker (topic ids, member ids, producer ids)
// fills the fields that name it.

// The fuzz run's own topics: fuzzA has records on 3 partitions, fuzzB is
// compacted with keyed records, fuzzE stays empty, fuzzP may grow, and the
// churn topics are created and deleted by the steps.
const (
	fuzzA     = "fz-a"
	fuzzB     = "fz-b"
	fuzzE     = "fz-e"
	fuzzP     = "fz-p"
	fuzzGroup = "fz-g"  // a classic group with one stable member
	fuzzTx    = "fz-tx" // a transactional id with an open transaction
)

var fuzzChurn = []string{"fz-c1", "fz-c2"}

// fuzzer generates and sends the steps of one session.
type fuzzer struct {
	s    *Session
	r    *rand.Rand
	vers map[int16]Versions
	step int
	desc []string

	// What this session learned from its broker.
	producers map[string]fuzzProducer // by transactional id; "" is the idempotent one
	members   map[string]fuzzMember   // classic and consumer group members by group
	deleted   map[string][16]byte     // ids of topics a step deleted
	// joined lists the fresh groups JoinGroup steps named (answered or
	// not: the list is the same on both sessions).
	joined   []string
	cgJoined []string // the same for the KIP-848 groups of ConsumerGroupHeartbeat
	inSetup  bool
}

type fuzzProducer struct {
	id    int64
	epoch int16
}

type fuzzMember struct {
	id         string
	generation int32
}

// FuzzScript sets up the fuzz topics, groups and producers on s and sends
// steps random requests drawn from seed, at versions of vers (the ranges
// both brokers advertise). Transport failures stop it (Session.Err);
// answers, closed connections included, are recorded as steps.
func FuzzScript(s *Session, seed uint64, steps int, vers map[int16]Versions) error {
	f := &fuzzer{s: s, r: rand.New(rand.NewPCG(seed, 0x5a4d5a)), vers: vers,
		producers: map[string]fuzzProducer{}, members: map[string]fuzzMember{}, deleted: map[string][16]byte{}}
	if err := f.setup(); err != nil {
		return err
	}
	gens := f.generators()
	names := make([]string, 0, len(gens))
	for _, g := range gens {
		if _, ok := vers[int16(g.key)]; ok {
			names = append(names, kmsg.NameForKey(int16(g.key)))
		}
	}
	for f.step = 0; f.step < steps; f.step++ {
		g := gens[f.r.IntN(len(gens))]
		r, ok := vers[int16(g.key)]
		if !ok {
			continue // not served by both: the draw is the same on both sessions
		}
		v := r.Min + int16(f.r.IntN(int(r.Max-r.Min)+1))
		f.desc = f.desc[:0]
		req := g.gen(f, v)
		if f.flexible(req, v) {
			if f.pick("tags", "none", "none", "unknown") == "unknown" {
				f.tag(req)
			}
		}
		resp := s.Do(fmt.Sprintf("fz%04d %s", f.step, strings.Join(f.desc, " ")), v, req)
		f.learn(req, resp)
		if g.after != nil {
			if err := g.after(f, req, resp); err != nil {
				return err
			}
		}
		if err := s.Err(); err != nil {
			return err
		}
	}
	return nil
}

// flexible reports whether req at v is a flexible version (SetVersion is
// called by Do; IsFlexible reads the version set on req).
func (f *fuzzer) flexible(req kmsg.Request, v int16) bool {
	req.SetVersion(v)
	return req.IsFlexible()
}

// tag sets an unknown tagged field on the request's top level: a broker
// must skip the tags it does not know.
func (f *fuzzer) tag(req kmsg.Request) {
	fv := reflect.ValueOf(req).Elem().FieldByName("UnknownTags")
	if !fv.IsValid() {
		return
	}
	fv.Addr().Interface().(*kmsg.Tags).Set(1000+uint32(f.r.IntN(1000)), []byte("fz"))
}

// pick draws one of labels and records "field=label" in the step's name.
func (f *fuzzer) pick(field string, labels ...string) string {
	l := labels[f.r.IntN(len(labels))]
	f.desc = append(f.desc, field+"="+l)
	return l
}

// pickInt draws one of vals and records it in the step's name.
func pickInt[T int8 | int16 | int32 | int64 | int](f *fuzzer, field string, vals ...T) T {
	v := vals[f.r.IntN(len(vals))]
	f.desc = append(f.desc, fmt.Sprintf("%s=%d", field, v))
	return v
}

// maybe is true with probability 1/n, without naming it.
func (f *fuzzer) maybe(n int) bool { return f.r.IntN(n) == 0 }

// topic draws a topic name from the domain: the fuzz topics, the churn
// topics, a missing one, the internal topics and invalid names.
func (f *fuzzer) topic(field string) string {
	l := f.pick(field, "a", "a", "a", "b", "e", "p", "c1", "c2", "missing", "offsets", "txnstate", "empty", "invalid", "long", "dot")
	return fuzzTopicName(l)
}

func fuzzTopicName(label string) string {
	switch label {
	case "a":
		return fuzzA
	case "b":
		return fuzzB
	case "e":
		return fuzzE
	case "p":
		return fuzzP
	case "c1", "c2":
		return "fz-" + label
	case "missing":
		return "fz-missing"
	case "offsets":
		return "__consumer_offsets"
	case "txnstate":
		return "__transaction_state"
	case "empty":
		return ""
	case "invalid":
		return "bad name!"
	case "long":
		return strings.Repeat("t", 260)
	case "dot":
		return ".."
	}
	return label
}

// topicID draws a topic id for topic: its own (known), the zero id, an
// unknown one, or the stale id of a churn topic a step deleted.
func (f *fuzzer) topicID(topic string) [16]byte {
	switch f.pick("id", "known", "known", "known", "zero", "unknown", "stale") {
	case "known":
		return f.s.TopicID(topic)
	case "unknown":
		return [16]byte{0xf2, 0x11, 3: 7, 15: 1}
	case "stale":
		for _, c := range fuzzChurn {
			if id, ok := f.deleted[c]; ok {
				return id
			}
		}
		return [16]byte{0xde, 0xad, 15: 2}
	}
	return [16]byte{}
}

func (f *fuzzer) partition(field string) int32 {
	return pickInt[int32](f, field, 0, 0, 1, 2, 3, -1, 99, math.MaxInt32)
}

func (f *fuzzer) offset(field string) int64 {
	return pickInt[int64](f, field, 0, 1, 3, 5, 9, 100, -1, -2, 1<<40, math.MinInt64)
}

func (f *fuzzer) epoch(field string) int32 {
	return pickInt[int32](f, field, -1, -1, 0, 1, 9, math.MaxInt32)
}

func (f *fuzzer) group(field string) string {
	switch f.pick(field, "g", "g", "simple", "missing", "empty", "long", "fresh") {
	case "g":
		return fuzzGroup
	case "simple":
		return "fz-simple"
	case "missing":
		return "fz-nogroup"
	case "long":
		return strings.Repeat("g", 300)
	case "fresh":
		return fmt.Sprintf("fz-fresh-%d", f.step)
	}
	return ""
}

func (f *fuzzer) txnID(field string) string {
	switch f.pick(field, "tx", "tx", "missing", "empty", "fresh") {
	case "tx":
		return fuzzTx
	case "missing":
		return "fz-notx"
	case "fresh":
		return fmt.Sprintf("fz-tx-%d", f.step)
	}
	return ""
}

// producer draws a producer id and epoch: the one the broker gave txn id
// (or the idempotent one), its epoch off by one, or made up.
func (f *fuzzer) producer(txn string) (int64, int16) {
	p, ok := f.producers[txn]
	switch f.pick("pid", "known", "known", "known", "epoch+1", "epoch-1", "none", "unknown") {
	case "known":
		if ok {
			return p.id, p.epoch
		}
		return -1, -1
	case "epoch+1":
		return p.id, p.epoch + 1
	case "epoch-1":
		return p.id, p.epoch - 1
	case "unknown":
		return 987654321, 0
	}
	return -1, -1
}

// member draws a member id and generation for group: its known member,
// a made-up one, or none.
func (f *fuzzer) member(group string) (string, int32) {
	m, ok := f.members[group]
	switch f.pick("member", "known", "known", "none", "bogus", "gen+1") {
	case "known":
		if ok {
			return m.id, m.generation
		}
		return "", -1
	case "bogus":
		return "fz-bogus-member", 1
	case "gen+1":
		return m.id, m.generation + 1
	}
	return "", -1
}

func (f *fuzzer) str(field string) *string {
	switch f.pick(field, "null", "empty", "short", "long") {
	case "empty":
		return kmsg.StringPtr("")
	case "short":
		return kmsg.StringPtr("fz")
	case "long":
		return kmsg.StringPtr(strings.Repeat("m", 5000))
	}
	return nil
}

// count draws how many entries a list gets: often one, sometimes none or
// a few (which may repeat an entry).
func (f *fuzzer) count(field string) int {
	if field == "parts" {
		// A topic entry with no partitions: Kafka 4.4 leaves it out of
		// its answers (they are built from partition maps), samsa
		// answers it with an empty list; not worth the noise.
		return pickInt(f, field, 1, 1, 1, 2, 3)
	}
	return pickInt(f, field, 1, 1, 1, 0, 2, 3)
}

// fresh reports whether name is not in seen yet, and adds it. A topic
// named twice in one request is drawn in full but sent once: Kafka 4.4
// merges the entries of one topic (its answers come from maps), samsa
// answers each entry.
func fresh(seen map[string]bool, name string) bool {
	if seen[name] {
		return false
	}
	seen[name] = true
	return true
}

// records draws a record batch for a produce.
func (f *fuzzer) records(txn string) []byte {
	// Not an empty records field: Kafka 4.4 does not answer a Produce with
	// null or zero-length records (the connection waits a minute).
	switch f.pick("batch", "plain", "plain", "idempotent", "txn", "corrupt", "big") {
	case "idempotent":
		pid, epoch := f.producer("")
		seq := pickInt[int32](f, "seq", 0, 1, 5, 100, -1, math.MaxInt32)
		return f.s.batch(2, pid, epoch, seq, false)
	case "txn":
		pid, epoch := f.producer(txn)
		seq := pickInt[int32](f, "seq", 0, 1, 5, -1)
		return f.s.batch(2, pid, epoch, seq, true)
	case "corrupt":
		b := f.s.batch(2, -1, -1, -1, false)
		b[len(b)-1] ^= 0x5a
		return b
	case "big":
		return f.s.bigBatch(200_000)
	}
	return f.s.batch(pickInt(f, "n", 1, 3), -1, -1, -1, false)
}

// generator is one API's request generator and what to wait for after it
// (unrecorded), so the next steps do not race the broker's propagation.
type generator struct {
	key   kmsg.Key
	gen   func(f *fuzzer, v int16) kmsg.Request
	after func(f *fuzzer, req kmsg.Request, resp kmsg.Response) error
}

// learn keeps the ids a step's answer hands out.
func (f *fuzzer) learn(req kmsg.Request, resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		q := req.(*kmsg.InitProducerIDRequest)
		if r.ErrorCode == 0 {
			f.producers[deref(q.TransactionalID)] = fuzzProducer{r.ProducerID, r.ProducerEpoch}
		}
	case *kmsg.JoinGroupResponse:
		q := req.(*kmsg.JoinGroupRequest)
		// MEMBER_ID_REQUIRED hands out the id; fz-g keeps its stable member.
		if (r.ErrorCode == 0 || r.ErrorCode == 79) && (q.Group != fuzzGroup || f.inSetup) {
			f.members[q.Group] = fuzzMember{r.MemberID, r.Generation}
		}
	case *kmsg.ConsumerGroupHeartbeatResponse:
		q := req.(*kmsg.ConsumerGroupHeartbeatRequest)
		if r.ErrorCode == 0 && r.MemberID != nil {
			f.members[q.Group] = fuzzMember{*r.MemberID, r.MemberEpoch}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == 0 && t.Topic != nil {
				f.deleted[*t.Topic] = f.s.TopicID(*t.Topic)
			}
		}
	}
}

// setup creates the fuzz topics with records, a classic group with one
// member and commits, and an idempotent and a transactional producer with
// an open transaction; the requests are recorded and compared too.
func (f *fuzzer) setup() error {
	s := f.s
	f.inSetup = true
	defer func() { f.inSetup = false }()
	s.Do("fzsetup", 7, createTopicsReq(false,
		createTopic(fuzzA, 3, 1),
		createTopic(fuzzB, 1, 1, "cleanup.policy", "compact"),
		createTopic(fuzzE, 1, 1),
		createTopic(fuzzP, 1, 1)))
	if err := f.waitTopics(false, []string{fuzzA, fuzzB, fuzzE, fuzzP}); err != nil {
		return err
	}
	for p := int32(0); p < 3; p++ {
		for range 2 {
			s.Do("fzsetup", 9, s.produceReq(9, -1, nil, fuzzA, p, s.batch(3, -1, -1, -1, false)))
		}
	}
	s.Do("fzsetup", 9, s.produceReq(9, -1, nil, fuzzB, 0, s.batch(4, -1, -1, -1, false)))
	if err := s.SettleCoordinator(0, fuzzGroup); err != nil {
		return err
	}
	if err := s.SettleCoordinator(1, fuzzTx); err != nil {
		return err
	}
	if err := f.loadCoordinators(); err != nil {
		return err
	}
	for range 2 {
		m := f.members[fuzzGroup]
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = fuzzGroup, m.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 300000, 60000
		sub := kmsg.NewConsumerMemberMetadata()
		sub.Topics = []string{fuzzA}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
		f.learn(req, s.Do("fzsetup", 9, req))
	}
	m := f.members[fuzzGroup]
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation = fuzzGroup, m.id, m.generation
	sg.ProtocolType, sg.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: m.id, MemberAssignment: []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}}}
	s.Do("fzsetup", 5, sg)
	for _, c := range []struct {
		group string
		gen   int32
		id    string
	}{{fuzzGroup, m.generation, m.id}, {"fz-simple", -1, ""}} {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = c.group, c.gen, c.id
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: fuzzA, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
			{Partition: 0, Offset: 1, LeaderEpoch: -1}, {Partition: 1, Offset: 4, LeaderEpoch: -1}}}}
		s.Do("fzsetup", 8, oc)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionTimeoutMillis = 60000
	if err := s.Settle(60*time.Second, 4, ip, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }); err != nil {
		return err
	}
	f.learn(ip, s.Do("fzsetup-idempotent", 4, ip))
	p := f.producers[""]
	s.Do("fzsetup", 11, s.produceReq(11, -1, nil, fuzzA, 2, s.batch(2, p.id, p.epoch, 0, false)))
	ip = kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(fuzzTx), 900000
	f.learn(ip, s.Do("fzsetup-txn", 4, ip))
	p = f.producers[fuzzTx]
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = fuzzTx, p.id, p.epoch
	ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: fuzzA, Partitions: []int32{1}}}
	s.Do("fzsetup", 3, ap)
	s.Do("fzsetup", 11, s.produceReq(11, -1, kmsg.StringPtr(fuzzTx), fuzzA, 1, s.batch(2, p.id, p.epoch, 0, true)))
	return s.Err()
}

// settleTxn waits (unrecorded) until txn is in no Prepare* state: an
// EndTxn or an epoch bump completes asynchronously on both brokers.
func (f *fuzzer) settleTxn(txn string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{txn}
		resp, err := f.s.Quiet(0, req)
		if err != nil {
			return err
		}
		st := resp.(*kmsg.DescribeTransactionsResponse).TransactionStates
		if len(st) == 0 || !strings.HasPrefix(st[0].State, "Prepare") && st[0].ErrorCode != 51 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: transaction %s stays %s", ErrDiffTimeout, f.s.Broker, txn, st[0].State)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// waitCreated waits until the topics a CreateTopics or CreatePartitions
// step made have leaders, and the ones a DeleteTopics removed are gone.
func (f *fuzzer) waitTopics(gone bool, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	if err := f.s.WaitTopics(60*time.Second, gone, topics...); err != nil || gone {
		return err
	}
	return f.waitLeaders(topics)
}

// waitLeaders polls ListOffsets on every partition of topics until each
// answers without error: Kafka's metadata names a leader a moment before
// its replica manager takes appends (NOT_LEADER_OR_FOLLOWER meanwhile).
func (f *fuzzer) waitLeaders(topics []string) error {
	meta, err := f.s.Quiet(12, metadataReq(12, false, topics...))
	if err != nil {
		return err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, t := range meta.(*kmsg.MetadataResponse).Topics {
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = deref(t.Topic)
		for _, p := range t.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p.Partition, -1, -1
			lt.Partitions = append(lt.Partitions, lp)
		}
		req.Topics = append(req.Topics, lt)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := f.s.Quiet(7, req)
		if err != nil {
			return err
		}
		ready := true
		for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				ready = ready && p.ErrorCode == 0
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: partitions of %v take no appends", ErrDiffTimeout, f.s.Broker, topics)
		}
		<-time.After(20 * time.Millisecond)
	}
}

// loadCoordinators waits until every partition of __consumer_offsets and
// __transaction_state is loaded: Kafka answers NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS for a group or transactional id of a
// partition it has not loaded yet, and the fuzz steps name many. 400
// names cover the 50 partitions of each (by their keys' hash).
func (f *fuzzer) loadCoordinators() error {
	var keys []string
	for i := range 400 {
		keys = append(keys, fmt.Sprintf("fz-load-%d", i))
	}
	first := func(codes ...int16) int16 {
		for _, c := range codes {
			if retriable[c] {
				return c
			}
		}
		return 0
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = keys
	if err := f.s.Settle(60*time.Second, 5, dg, func(r kmsg.Response) int16 {
		var codes []int16
		for _, g := range r.(*kmsg.DescribeGroupsResponse).Groups {
			codes = append(codes, g.ErrorCode)
		}
		return first(codes...)
	}); err != nil {
		return err
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = keys
	return f.s.Settle(60*time.Second, 0, dt, func(r kmsg.Response) int16 {
		var codes []int16
		for _, t := range r.(*kmsg.DescribeTransactionsResponse).TransactionStates {
			codes = append(codes, t.ErrorCode)
		}
		return first(codes...)
	})
}

// identityFields name the fields that identify an entry of a response
// list, in the order they are compared.
var identityFields = []string{"Topic", "TopicID", "Name", "Group", "TransactionalID", "ResourceType",
	"ResourceName", "Partition", "MemberID", "User", "Key", "ApiKey", "NodeID", "BrokerID"}

// sortLists puts every list of entries in resp in the order of their
// identity fields (stable, so duplicates keep theirs): the fuzz run's
// requests name topics, partitions and groups in any order, and which
// order the answer lists them in is not specified (Kafka answers
// validation failures first, samsa in request order; clients match by
// name). Lists of plain values and bytes are left alone.
func sortLists(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			sortLists(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				sortLists(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			sortLists(v.Index(i))
		}
		if v.Type().Elem().Kind() == reflect.Int32 && v.Len() > 1 {
			// Partition lists (DescribeTransactions, assignments):
			// Kafka answers them from hash sets. The replica lists
			// of this one-node run have one entry.
			sort.Slice(v.Interface(), func(a, b int) bool { return v.Index(a).Int() < v.Index(b).Int() })
			return
		}
		if v.Type().Elem().Kind() != reflect.Struct || v.Len() < 2 {
			return
		}
		keys := make([]string, v.Len())
		for i := range v.Len() {
			keys[i] = identity(v.Index(i))
		}
		idx := make([]int, v.Len())
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
		sorted := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i, j := range idx {
			sorted.Index(i).Set(v.Index(j))
		}
		reflect.Copy(v, sorted)
	}
}

func identity(e reflect.Value) string {
	var b strings.Builder
	for _, name := range identityFields {
		f := e.FieldByName(name)
		if !f.IsValid() {
			continue
		}
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				b.WriteString("\x00|")
				continue
			}
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fmt.Fprintf(&b, "%020d|", f.Int()+math.MaxInt64/2)
		default:
			fmt.Fprintf(&b, "%v|", f.Interface())
		}
	}
	return b.String()
}
