package controller

import (
	"fmt"
	"maps"
	"slices"
)

// Broker is a registered broker. Host and Port are its default advertised
// listener: the first one it registered, given to clients whose listener it
// lacks.
type Broker struct {
	ID   int32
	Host string
	Port int32
	// Listeners are every advertised client listener of the broker, the
	// default first, so that a client is answered with the address of the
	// listener its request came in on (Kafka's per-listener endpoints). A
	// registration recorded before this field existed has none.
	Listeners []BrokerListener
	Rack      *string
	Fenced    bool
	// Epoch is the broker epoch, the offset of the registration of the
	// current Incarnation (a process start); heartbeats and ISR changes
	// of an older incarnation are STALE_BROKER_EPOCH.
	Epoch       int64
	Incarnation string
	// LogDirs are the directory ids of the broker's online log
	// directories at registration, sorted (KIP-858; dir_placement.go).
	// None for a registration of an older build.
	LogDirs []Uuid
}

// BrokerListener is one advertised listener of a broker, by listener name
// (upper case, as config.Listener).
type BrokerListener struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// Endpoint returns the advertised address of the broker's listener named
// listener, or its default listener when it has no listener of that name
// (or listener is ""). Kafka leaves such a broker out of the answer
// instead; a mixed layout where one broker lacks a listener is a
// misconfiguration, and an address on another listener is the more useful
// answer there.
func (b Broker) Endpoint(listener string) (host string, port int32) {
	for _, l := range b.Listeners {
		if l.Name == listener {
			return l.Host, l.Port
		}
	}
	return b.Host, b.Port
}

// Partition is the replication state of one partition.
type Partition struct {
	Partition      int32
	Leader         int32 // -1 when no replica in the ISR is alive
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// AddingReplicas and RemovingReplicas are set while a reassignment is
	// in progress (reassign.go): Replicas then holds the target replicas
	// followed by the removing ones.
	AddingReplicas   []int32
	RemovingReplicas []int32
	// ELR are the eligible leader replicas (KIP-966, elr.go): replicas
	// that left the ISR while it was below min.insync.replicas, so they
	// hold every committed record and may lead when the ISR is empty.
	// LastKnownELR is the last leader of a partition whose ISR became
	// empty. Both stay empty unless Options.EligibleLeaderReplicas is set.
	ELR          []int32
	LastKnownELR []int32
	// Directories are the log directories of the replicas, in Replicas'
	// order (KIP-858, dir_placement.go); nil when every one is
	// DirMigrating. Read them with DirectoryOf.
	Directories []Uuid
	// LeaderRecoveryState is LeaderRecovering after an unclean election
	// until the leader reports it recovered (KIP-704,
	// leader_recovery.go).
	LeaderRecoveryState int8
}

// Reassigning reports whether a reassignment of the partition is in
// progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// Topic is a topic with its partitions (indexed by partition id) and its
// dynamic config overrides.
type Topic struct {
	Name       string
	ID         Uuid
	Partitions []Partition
	Configs    map[string]string
}

// Image is an immutable snapshot of the cluster metadata. Nothing reachable
// from an Image may be modified: Apply copies what it changes, and older
// images stay valid for readers that hold them.
type Image struct {
	Offset        int64 // offset of the last applied record; -1 for none
	ClusterID     string
	ControllerID  int32
	Brokers       map[int32]Broker
	Topics        map[string]*Topic
	TopicsByID    map[Uuid]*Topic
	BrokerConfigs map[string]map[string]string // "" = cluster default, "1" = broker 1
	// NextProducerID is the first producer id of the next block the
	// controller hands out (ProducerIDsRecord); 0 before any.
	NextProducerID int64
	// ScramCredentials are the SCRAM credentials by user and mechanism
	// (ScramSHA256, ScramSHA512); see scram.go.
	ScramCredentials map[string]map[int8]ScramCredential
	// DelegationTokens are the delegation tokens by token id
	// (delegation_token.go).
	DelegationTokens map[string]DelegationToken
	// ACLs are the ACLs of the authorizer (acl.go).
	ACLs ACLSet
	// ClientQuotas are the client quota values by entity and key; see
	// quota.go.
	ClientQuotas map[QuotaEntity]map[string]float64
	// LogDirs are the brokers' replica directory assignments and offline
	// log directories (log_dirs.go).
	LogDirs map[int32]BrokerLogDirs
	// GroupConfigs are the group config overrides (resource type GROUP)
	// by group id; see GroupConfig.
	GroupConfigs map[string]map[string]string
	// ClientMetrics are KIP-714's client metrics subscriptions (config
	// resource type CLIENT_METRICS): each subscription's configs
	// (metrics, interval.ms, match) by name. A subscription whose last
	// config is deleted is gone, as in Kafka.
	ClientMetrics map[string]map[string]string
	// Features are the feature levels FeatureLevelRecords finalized, by
	// name (0: removed); see features.go and FeatureLevel.
	Features map[string]int16
}

// GroupConfig returns a group's config overrides (share.*, consumer.*
// group configs set with IncrementalAlterConfigs), nil for none. The map
// belongs to the image: do not modify it.
func (img *Image) GroupConfig(group string) map[string]string {
	return img.GroupConfigs[group]
}

// EmptyImage returns an image with no records applied.
func EmptyImage(clusterID string, controllerID int32) *Image {
	return &Image{
		Offset:        -1,
		ClusterID:     clusterID,
		ControllerID:  controllerID,
		Brokers:       map[int32]Broker{},
		Topics:        map[string]*Topic{},
		TopicsByID:    map[Uuid]*Topic{},
		BrokerConfigs: map[string]map[string]string{},
	}
}

// Topic returns the named topic or nil.
func (img *Image) Topic(name string) *Topic { return img.Topics[name] }

// UnfencedBrokers returns the ids of unfenced brokers in ascending order.
func (img *Image) UnfencedBrokers() []int32 {
	ids := make([]int32, 0, len(img.Brokers))
	for id, b := range img.Brokers {
		if !b.Fenced {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Apply returns the image that results from applying rec to img. It does not
// modify img; unchanged parts are shared. Offset is left as in img: the
// caller that knows the record's log offset sets it (see applyBatch).
func Apply(img *Image, rec Record) (*Image, error) {
	b := newBuilder(img)
	if err := b.apply(rec); err != nil {
		return nil, err
	}
	return b.img, nil
}

// applyBatch applies recs, which were or will be stored at offsets
// firstOffset, firstOffset+1, ..., copying each changed part of img once.
func applyBatch(img *Image, firstOffset int64, recs []Record) (*Image, error) {
	b := newBuilder(img)
	for i, rec := range recs {
		if err := b.apply(rec); err != nil {
			return nil, fmt.Errorf("offset %d: %w", firstOffset+int64(i), err)
		}
	}
	if len(recs) > 0 {
		b.img.Offset = firstOffset + int64(len(recs)) - 1
	}
	return b.img, nil
}

// builder applies records copy-on-write: each map, topic and config map of
// the source image is copied the first time a record changes it.
type builder struct {
	img           *Image
	brokersOwned  bool
	topicsOwned   bool
	bcfgOwned     bool
	ownedTopics   map[*Topic]bool
	ownedBrokerCf map[string]bool
	ownedTopicCf  map[*Topic]bool
	scramOwned    bool
	quotasOwned   bool
}

func newBuilder(src *Image) *builder {
	img := *src
	return &builder{img: &img, ownedTopics: map[*Topic]bool{}, ownedBrokerCf: map[string]bool{}, ownedTopicCf: map[*Topic]bool{}}
}

func (b *builder) brokers() map[int32]Broker {
	if !b.brokersOwned {
		b.img.Brokers = cloneMap(b.img.Brokers)
		b.brokersOwned = true
	}
	return b.img.Brokers
}

func (b *builder) topicMaps() {
	if !b.topicsOwned {
		b.img.Topics = cloneMap(b.img.Topics)
		b.img.TopicsByID = cloneMap(b.img.TopicsByID)
		b.topicsOwned = true
	}
}

// ownTopic returns a private copy of t, registered in both topic maps.
func (b *builder) ownTopic(t *Topic) *Topic {
	if b.ownedTopics[t] {
		return t
	}
	b.topicMaps()
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	b.img.Topics[c.Name] = &c
	b.img.TopicsByID[c.ID] = &c
	b.ownedTopics[&c] = true
	return &c
}

func (b *builder) apply(rec Record) error {
	switch r := rec.(type) {
	case RegisterBrokerRecord:
		if r.BrokerID < 0 {
			return fmt.Errorf("%w: broker id %d", ErrApply, r.BrokerID)
		}
		b.brokers()[r.BrokerID] = Broker{ID: r.BrokerID, Host: r.Host, Port: r.Port, Listeners: slices.Clone(r.Listeners), Rack: r.Rack, Fenced: r.Fenced,
			Epoch: r.Epoch, Incarnation: r.Incarnation, LogDirs: slices.Clone(r.LogDirs)}
	case BrokerFenceRecord:
		br, ok := b.img.Brokers[r.BrokerID]
		if !ok {
			return fmt.Errorf("%w: fence of unknown broker %d", ErrApply, r.BrokerID)
		}
		br.Fenced = r.Fenced
		b.brokers()[r.BrokerID] = br
	case TopicRecord:
		if r.ID.IsZero() || r.Name == "" {
			return fmt.Errorf("%w: topic %q with id %s", ErrApply, r.Name, r.ID)
		}
		if _, ok := b.img.Topics[r.Name]; ok {
			return fmt.Errorf("%w: topic %q exists", ErrApply, r.Name)
		}
		if _, ok := b.img.TopicsByID[r.ID]; ok {
			return fmt.Errorf("%w: topic id %s exists", ErrApply, r.ID)
		}
		b.topicMaps()
		t := &Topic{Name: r.Name, ID: r.ID}
		b.img.Topics[r.Name] = t
		b.img.TopicsByID[r.ID] = t
		b.ownedTopics[t] = true
	case PartitionRecord:
		t, ok := b.img.TopicsByID[r.TopicID]
		if !ok {
			return fmt.Errorf("%w: partition of unknown topic id %s", ErrApply, r.TopicID)
		}
		if int(r.Partition) != len(t.Partitions) {
			return fmt.Errorf("%w: topic %q has %d partitions, record adds partition %d", ErrApply, t.Name, len(t.Partitions), r.Partition)
		}
		if len(r.Replicas) == 0 {
			return fmt.Errorf("%w: partition %s-%d without replicas", ErrApply, t.Name, r.Partition)
		}
		t = b.ownTopic(t)
		t.Partitions = append(t.Partitions, Partition{
			Partition:        r.Partition,
			Leader:           r.Leader,
			LeaderEpoch:      r.LeaderEpoch,
			PartitionEpoch:   r.PartitionEpoch,
			Replicas:         slices.Clone(r.Replicas),
			ISR:              slices.Clone(r.ISR),
			AddingReplicas:   slices.Clone(r.AddingReplicas),
			RemovingReplicas: slices.Clone(r.RemovingReplicas),
			ELR:              slices.Clone(r.ELR),
			LastKnownELR:     slices.Clone(r.LastKnownELR),
			Directories:      partitionDirs(r),
		})
		t.Partitions[r.Partition].LeaderRecoveryState = r.LeaderRecoveryState
	case PartitionChangeRecord:
		t, ok := b.img.TopicsByID[r.TopicID]
		if !ok {
			return fmt.Errorf("%w: change of unknown topic id %s", ErrApply, r.TopicID)
		}
		if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			return fmt.Errorf("%w: change of unknown partition %s-%d", ErrApply, t.Name, r.Partition)
		}
		t = b.ownTopic(t)
		p := t.Partitions[r.Partition]
		if r.Leader != nil && *r.Leader != p.Leader || r.BumpLeaderEpoch {
			if r.Leader != nil {
				p.Leader = *r.Leader
			}
			p.LeaderEpoch++
		}
		if r.ISR != nil {
			p.ISR = slices.Clone(r.ISR)
		}
		if r.Replicas != nil {
			p.Directories = b.img.realignDirs(p, r.Replicas)
			p.Replicas = slices.Clone(r.Replicas)
		}
		if r.AddingReplicas != nil {
			p.AddingReplicas = nilIfEmpty(*r.AddingReplicas)
		}
		if r.RemovingReplicas != nil {
			p.RemovingReplicas = nilIfEmpty(*r.RemovingReplicas)
		}
		if r.ELR != nil {
			p.ELR = nilIfEmpty(*r.ELR)
		}
		if r.LastKnownELR != nil {
			p.LastKnownELR = nilIfEmpty(*r.LastKnownELR)
		}
		if r.LeaderRecoveryState != nil {
			p.LeaderRecoveryState = *r.LeaderRecoveryState
		}
		p.PartitionEpoch++
		t.Partitions[r.Partition] = p
	case ConfigRecord:
		return b.applyConfig(r)
	case ScramCredentialRecord:
		return b.applyScram(r)
	case DelegationTokenRecord:
		return b.applyDelegationToken(r)
	case ACLRecord, RemoveACLRecord:
		return b.applyACL(r)
	case ClientQuotaRecord:
		return b.applyClientQuota(r)
	case ReplicaDirsRecord, BrokerOfflineDirsRecord, BrokerCordonedDirsRecord:
		return b.applyLogDirs(r)
	case UnregisterBrokerRecord:
		return b.applyUnregisterBroker(r)
	case FeatureLevelRecord:
		return b.applyFeatureLevel(r)
	case ProducerIDsRecord:
		if r.NextProducerID <= b.img.NextProducerID {
			return fmt.Errorf("%w: next producer id %d is not above the current %d", ErrApply, r.NextProducerID, b.img.NextProducerID)
		}
		b.img.NextProducerID = r.NextProducerID
	case RemoveTopicRecord:
		t, ok := b.img.TopicsByID[r.ID]
		if !ok {
			return fmt.Errorf("%w: removal of unknown topic id %s", ErrApply, r.ID)
		}
		b.topicMaps()
		delete(b.img.Topics, t.Name)
		delete(b.img.TopicsByID, t.ID)
	default:
		return fmt.Errorf("%w: %T", ErrUnknownRecord, rec)
	}
	return nil
}

func (b *builder) applyConfig(r ConfigRecord) error {
	if r.Name == "" {
		return fmt.Errorf("%w: config record without a name", ErrApply)
	}
	switch r.ResourceType {
	case ConfigResourceTopic:
		t, ok := b.img.Topics[r.ResourceName]
		if !ok {
			return fmt.Errorf("%w: config of unknown topic %q", ErrApply, r.ResourceName)
		}
		t = b.ownTopic(t)
		if !b.ownedTopicCf[t] {
			t.Configs = cloneMap(t.Configs)
			b.ownedTopicCf[t] = true
		}
		setOrDelete(t.Configs, r.Name, r.Value)
	case ConfigResourceBroker:
		if !b.bcfgOwned {
			b.img.BrokerConfigs = cloneMap(b.img.BrokerConfigs)
			b.bcfgOwned = true
		}
		if !b.ownedBrokerCf[r.ResourceName] {
			b.img.BrokerConfigs[r.ResourceName] = cloneMap(b.img.BrokerConfigs[r.ResourceName])
			b.ownedBrokerCf[r.ResourceName] = true
		}
		m := b.img.BrokerConfigs[r.ResourceName]
		setOrDelete(m, r.Name, r.Value)
		if len(m) == 0 {
			delete(b.img.BrokerConfigs, r.ResourceName)
			delete(b.ownedBrokerCf, r.ResourceName)
		}
	case ConfigResourceGroup:
		// Group configs change rarely: copy the whole map on write.
		b.img.GroupConfigs = withConfig(b.img.GroupConfigs, r)
	case ConfigResourceClientMetrics:
		b.img.ClientMetrics = withConfig(b.img.ClientMetrics, r)
	default:
		return fmt.Errorf("%w: config resource type %d", ErrApply, r.ResourceType)
	}
	return nil
}

// withConfig returns a copy of configs (resource name to its configs)
// with r applied; a resource left without configs is removed. For the
// resource types that change rarely (groups, client metrics), whose maps
// are copied whole on write.
func withConfig(configs map[string]map[string]string, r ConfigRecord) map[string]map[string]string {
	next := make(map[string]map[string]string, len(configs)+1)
	maps.Copy(next, configs)
	m := cloneMap(next[r.ResourceName])
	setOrDelete(m, r.Name, r.Value)
	if len(m) == 0 {
		delete(next, r.ResourceName)
	} else {
		next[r.ResourceName] = m
	}
	return next
}

func setOrDelete(m map[string]string, name string, value *string) {
	if value == nil {
		delete(m, name)
	} else {
		m[name] = *value
	}
}

// cloneMap copies m, returning an empty non-nil map for nil.
func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}
