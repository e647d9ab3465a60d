package controller

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds the controller's decisions: pure functions of an image and
// a request (and of randomness passed in) that return either records to
// commit or Kafka error codes. Nothing here locks, logs or touches the disk.

// maxTopicNameLength is Kafka's limit: 255 minus room for a partition suffix
// and the ".deleted" markers of its log directories.
const maxTopicNameLength = 249

// Internal topic names; only CreateInternalTopic may create them.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
)

func isInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic
}

// CreateTopic is one topic of a CreateTopics request.
type CreateTopic struct {
	Name              string
	NumPartitions     int32 // -1 = default
	ReplicationFactor int16 // -1 = default
	Assignment        map[int32][]int32
	Configs           map[string]string
}

// CreateTopicResult is the outcome for one topic. NumPartitions and
// ReplicationFactor are -1 on error.
type CreateTopicResult struct {
	Name              string
	ID                Uuid
	ErrorCode         int16
	ErrorMessage      string
	NumPartitions     int32
	ReplicationFactor int16
}

// DeleteTopicResult is the outcome of deleting one topic.
type DeleteTopicResult struct {
	Name         string
	ID           Uuid
	ErrorCode    int16
	ErrorMessage string
}

// topicRules are the settings CreateTopics decisions depend on.
type topicRules struct {
	defaultPartitions int32
	defaultRF         int16
	validateConfig    func(map[string]string) (int16, string)
	allowInternal     bool
	maxPartitions     int // cluster-wide; 0 = no limit
}

// ValidateTopicName is Kafka's Topic.validate: the legal-name rule every
// API applies (CreateTopics, Metadata auto-creation, DescribeConfigs), with
// Kafka's messages. It returns 0 for a legal name.
func ValidateTopicName(name string) (int16, string) {
	switch {
	case name == "":
		return kerr.InvalidTopicException.Code, "Topic name is illegal, it can't be empty"
	case name == "." || name == "..":
		return kerr.InvalidTopicException.Code, "Topic name cannot be \".\" or \"..\""
	case len(name) > maxTopicNameLength:
		return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic name is illegal, it can't be longer than %d characters, topic name: %s", maxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic name \"%s\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return 0, ""
}

// collisionName maps names that Kafka's metric names cannot tell apart
// ('.' and '_') to one form.
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// findCollision returns an existing topic whose name collides with name, or "".
func findCollision(img *Image, name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	want := collisionName(name)
	for other := range img.Topics {
		if other != name && collisionName(other) == want {
			return other
		}
	}
	return ""
}

// randomIndex returns a number in [0, n) drawn from r.
func randomIndex(r io.Reader, n int) int {
	if n <= 1 {
		return 0
	}
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		panic(fmt.Sprintf("controller: reading randomness: %v", err))
	}
	return int(binary.BigEndian.Uint64(b[:]) % uint64(n))
}

// placeReplicas assigns rf replicas to each of count partitions numbered
// from first, round-robin over brokers (rack-alternated, rackAlternated)
// beginning at start: the leader (first replica) of partition p is
// brokers[(start+p) % n], which spreads leaders across brokers. Its
// followers are the next brokers in the list whose rack the partition
// does not have yet, then, when every rack has a replica, the next
// brokers of any rack: a partition spans min(rf, racks) racks also when
// the racks are of uneven size (Kafka's rack-striped placement). With no
// racks (rackOf "" for all) the followers are simply the next rf-1
// brokers.
func placeReplicas(brokers []int32, rackOf func(int32) string, first, count int32, rf int16, start int) [][]int32 {
	n := len(brokers)
	out := make([][]int32, count)
	for i := range out {
		at := start + int(first) + i
		replicas := make([]int32, 0, rf)
		leader := brokers[at%n]
		replicas = append(replicas, leader)
		racks := map[string]bool{rackOf(leader): true}
		for j := 1; j < n && len(replicas) < int(rf); j++ {
			if b := brokers[(at+j)%n]; !racks[rackOf(b)] {
				replicas = append(replicas, b)
				racks[rackOf(b)] = true
			}
		}
		for j := 1; j < n && len(replicas) < int(rf); j++ {
			if b := brokers[(at+j)%n]; !slices.Contains(replicas, b) {
				replicas = append(replicas, b)
			}
		}
		out[i] = replicas
	}
	return out
}

// rackOf returns a function giving a broker's rack ("" for none).
func rackOf(img *Image) func(int32) string {
	return func(id int32) string {
		if b, ok := img.Brokers[id]; ok && b.Rack != nil {
			return *b.Rack
		}
		return ""
	}
}

// rackAlternated orders brokers (ascending ids) so that consecutive
// entries come from different racks where possible: it takes one broker
// from each rack in turn, racks in name order. With placeReplicas walking
// this list, a partition's replicas span as many racks as there are. If no
// broker has a rack the order is unchanged.
func rackAlternated(img *Image, brokers []int32) []int32 {
	byRack := map[string][]int32{}
	hasRack := false
	for _, id := range brokers {
		rack := ""
		if r := img.Brokers[id].Rack; r != nil {
			rack, hasRack = *r, true
		}
		byRack[rack] = append(byRack[rack], id)
	}
	if !hasRack {
		return brokers
	}
	racks := sortedKeys(byRack)
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, rack := range racks {
			if i < len(byRack[rack]) {
				out = append(out, byRack[rack][i])
			}
		}
	}
	return out
}

// newPartitionRecord builds the record of a new partition: the ISR is the
// unfenced replicas and the leader the first of them.
func newPartitionRecord(img *Image, id Uuid, partition int32, replicas []int32) PartitionRecord {
	isr := make([]int32, 0, len(replicas))
	for _, r := range replicas {
		if b, ok := img.Brokers[r]; ok && !b.Fenced {
			isr = append(isr, r)
		}
	}
	leader := int32(-1)
	if len(isr) > 0 {
		leader = isr[0]
	}
	return PartitionRecord{TopicID: id, Partition: partition, Replicas: slices.Clone(replicas), ISR: isr, Leader: leader,
		Directories: img.defaultDirs(replicas)}
}

// checkReplicas validates one manual replica list for partition p.
func checkReplicas(img *Image, p int32, replicas []int32) (int16, string) {
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment for partition %d is empty.", p)
	}
	alive := false
	for i, r := range replicas {
		b, ok := img.Brokers[r]
		if !ok {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment for partition %d includes broker %d, which is not registered.", p, r)
		}
		if slices.Contains(replicas[:i], r) {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment for partition %d includes broker %d more than once.", p, r)
		}
		alive = alive || !b.Fenced
	}
	if !alive {
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("All brokers in the manual partition assignment for partition %d are fenced.", p)
	}
	return 0, ""
}

// placeNew assigns rf replicas to each of count new partitions numbered
// from first, as Kafka's StripedReplicaPlacer decides what is possible:
// the replication factor is checked against every registered broker,
// fenced ones included ("registered"), but for brokers whose every log
// directory is cordoned (KIP-1066: they get no new replica), at least one broker must be
// unfenced, and fenced brokers get replicas only when the unfenced ones
// are too few, after them (so never as leader; newPartitionRecord keeps
// them out of the ISR). start picks the round-robin start among the
// unfenced brokers.
func placeNew(img *Image, first, count int32, rf int16, start func(unfenced []int32) int) ([][]int32, int16, string) {
	unfenced := rackAlternated(img, slices.DeleteFunc(img.UnfencedBrokers(), func(id int32) bool { return !img.hasUncordonedDir(id) }))
	var fenced []int32
	for id, b := range img.Brokers {
		if b.Fenced && img.hasUncordonedDir(id) {
			fenced = append(fenced, id)
		}
	}
	slices.Sort(fenced)
	fenced = rackAlternated(img, fenced)
	if len(unfenced) == 0 {
		return nil, kerr.InvalidReplicationFactor.Code, "All brokers are currently fenced, or have all their log directories cordoned."
	}
	if total := len(unfenced) + len(fenced); int(rf) > total {
		code, msg := rfUnreachable(rf, total)
		return nil, code, msg
	}
	if int(rf) <= len(unfenced) {
		return placeReplicas(unfenced, rackOf(img), first, count, rf, start(unfenced)), 0, ""
	}
	out := placeReplicas(unfenced, rackOf(img), first, count, int16(len(unfenced)), start(unfenced))
	extra := int(rf) - len(unfenced)
	for i := range out {
		for j := range extra {
			out[i] = append(out[i], fenced[(int(first)+i+j)%len(fenced)])
		}
	}
	return out, 0, ""
}

func rfUnreachable(rf int16, brokers int) (int16, string) {
	return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered or some brokers have all their log directories cordoned.", rf, rf, brokers)
}

// decideCreateTopic decides one topic against img (which already includes
// the topics created earlier in the same request). On success it returns the
// records and fills in the result.
func decideCreateTopic(img *Image, req CreateTopic, rules topicRules, rand io.Reader) (CreateTopicResult, []Record) {
	res := CreateTopicResult{Name: req.Name, NumPartitions: -1, ReplicationFactor: -1}
	fail := func(code int16, msg string) (CreateTopicResult, []Record) {
		res.ErrorCode, res.ErrorMessage = code, msg
		return res, nil
	}
	if code, msg := ValidateTopicName(req.Name); code != 0 {
		return fail(code, msg)
	}
	if t := img.Topics[req.Name]; t != nil {
		return fail(kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", req.Name))
	}
	if other := findCollision(img, req.Name); other != "" {
		return fail(kerr.InvalidTopicException.Code, fmt.Sprintf("Topic '%s' collides with existing topic: %s", req.Name, other))
	}
	if isInternalTopic(req.Name) && !rules.allowInternal {
		return fail(kerr.InvalidRequest.Code, fmt.Sprintf("Topic '%s' is internal and is created by the broker.", req.Name))
	}

	var assignment [][]int32
	if len(req.Assignment) > 0 {
		if req.NumPartitions != -1 || req.ReplicationFactor != -1 {
			return fail(kerr.InvalidRequest.Code, "A manual partition assignment was given, but numPartitions or replicationFactor is not -1.")
		}
		assignment = make([][]int32, len(req.Assignment))
		for p, replicas := range req.Assignment {
			if p < 0 || int(p) >= len(assignment) {
				return fail(kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment has partition %d, but partition ids must be consecutive from 0.", p))
			}
			assignment[p] = replicas
		}
		for p, replicas := range assignment {
			if code, msg := checkReplicas(img, int32(p), replicas); code != 0 {
				return fail(code, msg)
			}
			if len(replicas) != len(assignment[0]) {
				return fail(kerr.InvalidReplicaAssignment.Code, "All partitions in the manual partition assignment must have the same number of replicas.")
			}
		}
	} else {
		partitions, rf := req.NumPartitions, req.ReplicationFactor
		if partitions == -1 {
			partitions = max(rules.defaultPartitions, 1)
		}
		if rf == -1 {
			rf = max(rules.defaultRF, 1)
		}
		if partitions <= 0 {
			return fail(kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value.")
		}
		if rf <= 0 {
			return fail(kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value.")
		}
		var code int16
		var msg string
		assignment, code, msg = placeNew(img, 0, partitions, rf, func(unfenced []int32) int { return randomIndex(rand, len(unfenced)) })
		if code != 0 {
			return fail(code, msg)
		}
	}

	if rules.validateConfig != nil {
		if code, msg := rules.validateConfig(req.Configs); code != 0 {
			return fail(code, msg)
		}
	}

	id := NewUuid(rand)
	for img.TopicsByID[id] != nil {
		id = NewUuid(rand)
	}
	recs := make([]Record, 0, 1+len(assignment)+len(req.Configs))
	recs = append(recs, TopicRecord{Name: req.Name, ID: id})
	for _, name := range sortedKeys(req.Configs) {
		v := req.Configs[name]
		recs = append(recs, ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: req.Name, Name: name, Value: &v})
	}
	for p, replicas := range assignment {
		recs = append(recs, newPartitionRecord(img, id, int32(p), replicas))
	}
	res.ID = id
	res.NumPartitions = int32(len(assignment))
	res.ReplicationFactor = int16(len(assignment[0]))
	return res, recs
}

// Limits on one request, as in Kafka 4.4's ReplicationControlManager
// (KAFKA-17870) and QuorumController (a user operation produces at most
// 10,000 records; more is "excessively large"). They bound the work and
// memory of one decision and the time the write lock is held.
const (
	// MaxPartitionsPerRequest is the most partitions one CreateTopics, or
	// the most additional partitions one CreatePartitions, may ask for.
	MaxPartitionsPerRequest = 10_000
	// maxRecordsPerOp is the most records one request may commit (and the
	// most results one CreatePartitions may carry).
	maxRecordsPerOp = 10_000
)

// Kafka's messages for the limits above (PolicyViolationException).
const (
	msgTooManyPartitions           = "Excessively large number of partitions per request."
	msgTooManyAdditionalPartitions = "Excessively large number of additional partitions per request."
	msgBatchTooLarge               = "Unable to perform excessively large batch operation."
)

// RequestError is a failure of a whole request, which Kafka reports by
// giving every topic of the request the same error (its
// AbstractRequest.getErrorResponse), duplicates and topics that failed
// other checks included.
type RequestError struct {
	Code    int16
	Message string
}

// CheckCreateTopicsPartitions is Kafka's validateTotalNumberOfPartitions
// for CreateTopics: the partitions the request asks for, counting
// defaultPartitions for -1, the assignment's length when there is one, and
// nothing for other non-positive counts, must not exceed
// MaxPartitionsPerRequest. It runs before any other check and before
// anything is allocated per partition, also for validate_only, and a
// violation fails the whole request. The sum is 64-bit and checked as it
// grows, so no count can overflow it.
func CheckCreateTopicsPartitions(reqs []CreateTopic, defaultPartitions int32) *RequestError {
	var total int64
	for _, r := range reqs {
		switch {
		case len(r.Assignment) > 0:
			total += int64(len(r.Assignment))
		case r.NumPartitions == -1:
			total += int64(max(defaultPartitions, 1))
		case r.NumPartitions > 0:
			total += int64(r.NumPartitions)
		}
		if total > MaxPartitionsPerRequest {
			return &RequestError{Code: kerr.PolicyViolation.Code, Message: msgTooManyPartitions}
		}
	}
	return nil
}

// CreatePartitionsTopic is one topic of a CreatePartitions request: grow
// Topic to Count partitions, with Assignment (if non-nil) giving the
// replicas of each new partition.
type CreatePartitionsTopic struct {
	Topic      string
	Count      int32
	Assignment [][]int32
}

// CreatePartitionsResult is the outcome for one topic of CreatePartitions.
type CreatePartitionsResult struct {
	Topic        string
	ErrorCode    int16
	ErrorMessage string
}

// checkCreatePartitionsTotal is Kafka's validateTotalNumberOfPartitions for
// CreatePartitions: the partitions added to known topics (negative counts,
// unknown topics and counts that do not grow a topic add nothing) must not
// exceed MaxPartitionsPerRequest.
func checkCreatePartitionsTotal(img *Image, reqs []CreatePartitionsTopic) *RequestError {
	var total int64
	for _, r := range reqs {
		if r.Count < 0 {
			continue
		}
		t := img.Topics[r.Topic]
		if t == nil {
			continue
		}
		additional := int64(r.Count) - int64(len(t.Partitions))
		if additional <= 0 {
			continue
		}
		total += additional
		if total > MaxPartitionsPerRequest {
			return &RequestError{Code: kerr.PolicyViolation.Code, Message: msgTooManyAdditionalPartitions}
		}
	}
	return nil
}

// totalPartitions counts the partitions of every topic in img.
func totalPartitions(img *Image) int64 {
	var n int64
	for _, t := range img.Topics {
		n += int64(len(t.Partitions))
	}
	return n
}

// clusterLimitError is the error of a request that would grow the cluster
// past maxPartitions (Options.MaxPartitions). Kafka has no such limit; it is
// samsa's bound on the metadata one controller serves and on the logs one
// broker must open.
func clusterLimitError(current, adding int64, maxPartitions int) (int16, string) {
	return kerr.PolicyViolation.Code, fmt.Sprintf("Creating %d partition(s) would bring the cluster to %d partitions, more than its limit of %d.", adding, current+adding, maxPartitions)
}

// decideCreateTopics decides every topic of one request. Names given more
// than once all fail with INVALID_REQUEST. The returned records create all
// successful topics and are meant to be committed together. A non-nil
// RequestError fails every topic (see RequestError) and comes with no
// records.
func decideCreateTopics(img *Image, reqs []CreateTopic, rules topicRules, rand io.Reader) ([]CreateTopicResult, []Record, *RequestError) {
	if rerr := CheckCreateTopicsPartitions(reqs, rules.defaultPartitions); rerr != nil {
		return requestFailed(reqs, rerr), nil, rerr
	}
	seen := make(map[string]int, len(reqs))
	for _, r := range reqs {
		seen[r.Name]++
	}
	work := newBuilder(img)
	results := make([]CreateTopicResult, len(reqs))
	var recs []Record
	for i, req := range reqs {
		if seen[req.Name] > 1 {
			results[i] = CreateTopicResult{Name: req.Name, NumPartitions: -1, ReplicationFactor: -1,
				ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: fmt.Sprintf("Topic '%s' appears more than once in the request.", req.Name)}
			continue
		}
		res, topicRecs := decideCreateTopic(work.img, req, rules, rand)
		if res.ErrorCode == 0 && rules.maxPartitions > 0 {
			current, adding := totalPartitions(work.img), int64(res.NumPartitions)
			if current+adding > int64(rules.maxPartitions) {
				code, msg := clusterLimitError(current, adding, rules.maxPartitions)
				res, topicRecs = CreateTopicResult{Name: req.Name, ErrorCode: code, ErrorMessage: msg, NumPartitions: -1, ReplicationFactor: -1}, nil
			}
		}
		results[i] = res
		if len(recs)+len(topicRecs) > maxRecordsPerOp {
			rerr := &RequestError{Code: kerr.PolicyViolation.Code, Message: msgBatchTooLarge}
			return requestFailed(reqs, rerr), nil, rerr
		}
		for _, rec := range topicRecs {
			if err := work.apply(rec); err != nil {
				panic(fmt.Sprintf("controller: create topic decision made an inapplicable record: %v", err))
			}
		}
		recs = append(recs, topicRecs...)
	}
	return results, recs, nil
}

// requestFailed gives every topic of reqs the request's error.
func requestFailed(reqs []CreateTopic, rerr *RequestError) []CreateTopicResult {
	results := make([]CreateTopicResult, len(reqs))
	for i, r := range reqs {
		results[i] = CreateTopicResult{Name: r.Name, ErrorCode: rerr.Code, ErrorMessage: rerr.Message, NumPartitions: -1, ReplicationFactor: -1}
	}
	return results
}

// decideDeleteTopics resolves names and ids to topics and returns a
// RemoveTopicRecord for each distinct topic found.
func decideDeleteTopics(img *Image, names []string, ids []Uuid) ([]DeleteTopicResult, []Record) {
	results := make([]DeleteTopicResult, 0, len(names)+len(ids))
	var recs []Record
	removed := map[Uuid]bool{}
	nameCount := map[string]int{}
	for _, n := range names {
		nameCount[n]++
	}
	idCount := map[Uuid]int{}
	for _, id := range ids {
		idCount[id]++
	}
	remove := func(t *Topic) {
		if !removed[t.ID] {
			removed[t.ID] = true
			recs = append(recs, RemoveTopicRecord{ID: t.ID})
		}
	}
	for _, name := range names {
		res := DeleteTopicResult{Name: name}
		t := img.Topics[name]
		switch {
		case nameCount[name] > 1:
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, fmt.Sprintf("Topic '%s' appears more than once in the request.", name)
		case t == nil:
			res.ErrorCode, res.ErrorMessage = kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Description
		default:
			res.ID = t.ID
			remove(t)
		}
		results = append(results, res)
	}
	for _, id := range ids {
		res := DeleteTopicResult{ID: id}
		t := img.TopicsByID[id]
		switch {
		case id.IsZero():
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, "Topic id must not be the zero id."
		case idCount[id] > 1:
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, fmt.Sprintf("Topic id %s appears more than once in the request.", id)
		case t == nil:
			res.ErrorCode, res.ErrorMessage = kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Description
		default:
			res.Name = t.Name
			remove(t)
		}
		results = append(results, res)
	}
	return results, recs
}

// decideCreatePartitionsBatch decides every topic of one CreatePartitions
// request against the image that the earlier topics' records produce; the
// records are meant to be committed together (Kafka commits them
// atomically). The per-request limit is checked first, before anything is
// placed; a non-nil RequestError fails every topic and comes with no
// records. maxPartitions (0 = none) bounds the cluster's total.
func decideCreatePartitionsBatch(img *Image, reqs []CreatePartitionsTopic, maxPartitions int, rand io.Reader) ([]CreatePartitionsResult, []Record, *RequestError) {
	rerr := checkCreatePartitionsTotal(img, reqs)
	if rerr == nil && len(reqs) > maxRecordsPerOp {
		rerr = &RequestError{Code: kerr.PolicyViolation.Code, Message: msgBatchTooLarge}
	}
	results := make([]CreatePartitionsResult, len(reqs))
	if rerr != nil {
		for i, r := range reqs {
			results[i] = CreatePartitionsResult{Topic: r.Topic, ErrorCode: rerr.Code, ErrorMessage: rerr.Message}
		}
		return results, nil, rerr
	}
	work := newBuilder(img)
	var recs []Record
	for i, r := range reqs {
		code, msg, topicRecs := decideCreatePartitions(work.img, r.Topic, r.Count, r.Assignment, rand)
		if code == 0 && maxPartitions > 0 {
			current, adding := totalPartitions(work.img), int64(len(topicRecs))
			if current+adding > int64(maxPartitions) {
				code, msg = clusterLimitError(current, adding, maxPartitions)
				topicRecs = nil
			}
		}
		results[i] = CreatePartitionsResult{Topic: r.Topic, ErrorCode: code, ErrorMessage: msg}
		for _, rec := range topicRecs {
			if err := work.apply(rec); err != nil {
				panic(fmt.Sprintf("controller: create partitions decision made an inapplicable record: %v", err))
			}
		}
		recs = append(recs, topicRecs...)
	}
	return results, recs, nil
}

// decideCreatePartitions grows topic to count partitions. The caller has
// bounded count - current partitions (checkCreatePartitionsTotal).
func decideCreatePartitions(img *Image, topic string, count int32, assignment [][]int32, rand io.Reader) (int16, string, []Record) {
	t := img.Topics[topic]
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Description, nil
	}
	current := int32(len(t.Partitions))
	// The messages are Kafka 4.4's (ReplicationControlManager), which kafka-topics prints.
	if count < current {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", topic, current, count), nil
	}
	if count == current {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partition(s).", current), nil
	}
	rf := int16(len(t.Partitions[0].Replicas))
	adding := count - current
	if adding > MaxPartitionsPerRequest {
		return kerr.PolicyViolation.Code, msgTooManyAdditionalPartitions, nil
	}
	if assignment != nil {
		if int32(len(assignment)) != adding {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Attempted to add %d additional partitions, but only %d assignments were specified.", adding, len(assignment)), nil
		}
		for i, replicas := range assignment {
			p := current + int32(i)
			if code, msg := checkReplicas(img, p, replicas); code != 0 {
				return code, msg, nil
			}
			if len(replicas) != int(rf) {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment for partition %d has %d replicas, but the topic's replication factor is %d.", p, len(replicas), rf), nil
			}
		}
	} else {
		// Continue the round-robin from where partition 0 started, so the new
		// leaders follow the existing ones around the broker list.
		var code int16
		var msg string
		assignment, code, msg = placeNew(img, current, adding, rf, func(unfenced []int32) int {
			if start := slices.Index(unfenced, t.Partitions[0].Replicas[0]); start >= 0 {
				return start
			}
			return randomIndex(rand, len(unfenced))
		})
		if code != 0 {
			return code, msg, nil
		}
	}
	recs := make([]Record, 0, len(assignment))
	for i, replicas := range assignment {
		recs = append(recs, newPartitionRecord(img, t.ID, current+int32(i), replicas))
	}
	return 0, "", recs
}

// OpType is an IncrementalAlterConfigs operation, numbered as in Kafka.
type OpType int8

// Config operations.
const (
	OpSet      OpType = 0
	OpDelete   OpType = 1
	OpAppend   OpType = 2
	OpSubtract OpType = 3
)

// ConfigOp is one operation of an incremental config change. Value is
// ignored for OpDelete; for OpAppend and OpSubtract it is a comma-separated
// list.
type ConfigOp struct {
	Name  string
	Value *string
	Op    OpType
}

// applyConfigOps computes the config map that results from ops on current.
// APPEND and SUBTRACT start from the override, or when there is none from
// defaultOf (if non-nil), as Kafka does: appending "compact" to an unset
// cleanup.policy gives "delete,compact".
func applyConfigOps(current map[string]string, ops []ConfigOp, defaultOf func(name string) (string, bool)) (map[string]string, int16, string) {
	next := cloneMap(current)
	seen := map[string]bool{}
	for _, op := range ops {
		if op.Name == "" {
			return nil, kerr.InvalidRequest.Code, "Config name must not be empty."
		}
		if seen[op.Name] {
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Config %s appears more than once in the request.", op.Name)
		}
		seen[op.Name] = true
		switch op.Op {
		case OpSet:
			if op.Value == nil {
				return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Null value not supported for: %s", op.Name)
			}
			next[op.Name] = *op.Value
		case OpDelete:
			delete(next, op.Name)
		case OpAppend, OpSubtract:
			if op.Value == nil {
				return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Null value not supported for: %s", op.Name)
			}
			value, ok := next[op.Name]
			if !ok && defaultOf != nil {
				value, _ = defaultOf(op.Name)
			}
			list := splitList(value)
			for _, v := range splitList(*op.Value) {
				has := slices.Contains(list, v)
				if op.Op == OpAppend && !has {
					list = append(list, v)
				} else if op.Op == OpSubtract && has {
					list = slices.DeleteFunc(list, func(s string) bool { return s == v })
				}
			}
			if len(list) == 0 && op.Op == OpSubtract {
				delete(next, op.Name)
			} else {
				next[op.Name] = strings.Join(list, ",")
			}
		default:
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unknown config operation %d for %s.", op.Op, op.Name)
		}
	}
	return next, 0, ""
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// configDiff returns the ConfigRecords that turn from into to.
func configDiff(resourceType int8, resource string, from, to map[string]string) []Record {
	var recs []Record
	for _, name := range sortedKeys(from) {
		if _, ok := to[name]; !ok {
			recs = append(recs, ConfigRecord{ResourceType: resourceType, ResourceName: resource, Name: name})
		}
	}
	for _, name := range sortedKeys(to) {
		if old, ok := from[name]; !ok || old != to[name] {
			v := to[name]
			recs = append(recs, ConfigRecord{ResourceType: resourceType, ResourceName: resource, Name: name, Value: &v})
		}
	}
	return recs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decideTopicConfigs validates the new config map of topic and returns the
// records that change it.
func decideTopicConfigs(img *Image, topic string, next map[string]string, validate func(map[string]string) (int16, string)) (int16, string, []Record) {
	t := img.Topics[topic]
	if t == nil {
		return kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Description, nil
	}
	if validate != nil {
		if code, msg := validate(next); code != 0 {
			return code, msg, nil
		}
	}
	return 0, "", configDiff(ConfigResourceTopic, topic, t.Configs, next)
}

// validBrokerResource checks a broker config resource name: "" for the
// cluster default or a non-negative broker id.
func validBrokerResource(name string) (int16, string) {
	if name == "" {
		return 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != name {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid broker resource name %q: want a broker id or the empty string.", name)
	}
	return 0, ""
}

// decideRegisterBroker returns the record that registers b, or nothing when
// the registration is unchanged. previousEpoch is the broker epoch the
// new incarnation recorded at its clean shutdown (-1: none); with
// eligible leader replicas, a new incarnation of a known broker that does
// not bring its last epoch shut down uncleanly and leaves every ISR and
// ELR (decideUncleanShutdown).
func decideRegisterBroker(img *Image, b Broker, previousEpoch int64, unclean UncleanPolicy, elr ELRPolicy) []Record {
	old, known := img.Brokers[b.ID]
	newIncarnation := b.Incarnation != "" && (!known || old.Incarnation != b.Incarnation)
	if known && !newIncarnation && old.Host == b.Host && old.Port == b.Port && old.Fenced == b.Fenced && equalPtr(old.Rack, b.Rack) && slices.Equal(old.Listeners, b.Listeners) &&
		slices.Equal(old.LogDirs, sortedDirs(b.LogDirs)) {
		return nil
	}
	var recs []Record
	epoch := old.Epoch
	if newIncarnation {
		// A new incarnation starts fenced (Kafka's registration): the
		// leaderships of the old one move away first, then the heartbeat
		// unfences it once it caught up with its registration.
		b.Fenced = true
		if known && !old.Fenced {
			_, recs = decideFenceBroker(img, b.ID, true, unclean, elr)
		}
		if known && elr.enabled() && previousEpoch != old.Epoch {
			cur, err := applyBatch(img, img.Offset+1, recs)
			if err != nil {
				panic(fmt.Sprintf("controller: registration decision: %v", err))
			}
			recs = append(recs, decideUncleanShutdown(cur, b.ID, unclean, elr)...)
		}
		epoch = img.Offset + 1 + int64(len(recs))
	} else if !known {
		epoch = img.Offset + 1
	}
	return append(recs, RegisterBrokerRecord{BrokerID: b.ID, Host: b.Host, Port: b.Port, Listeners: slices.Clone(b.Listeners), Rack: b.Rack, Fenced: b.Fenced,
		Epoch: epoch, Incarnation: b.Incarnation, LogDirs: sortedDirs(b.LogDirs)})
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
