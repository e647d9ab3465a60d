package controller

import (
	"encoding/json"
	"fmt"
)

// RecordType identifies a metadata record in a frame. Values are part of the
// on-disk format: never renumber, only add.
type RecordType int8

// Record types. See doc.go for the payload of each.
const (
	RecordRegisterBroker  RecordType = 1
	RecordTopic           RecordType = 2
	RecordPartition       RecordType = 3
	RecordPartitionChange RecordType = 4
	RecordConfig          RecordType = 5
	RecordRemoveTopic     RecordType = 6
	RecordBrokerFence     RecordType = 7
	RecordProducerIDs     RecordType = 8
)

// Config resource types, with Kafka's numbering (DescribeConfigs' ResourceType).
const (
	ConfigResourceTopic  int8 = 2
	ConfigResourceBroker int8 = 4
	ConfigResourceGroup  int8 = 32 // group configs (KIP-848, KIP-932)
	// ConfigResourceClientMetrics are KIP-714's client metrics
	// subscriptions, by subscription name.
	ConfigResourceClientMetrics int8 = 16
)

// Record is one change to the cluster metadata. Records are applied in log
// order by Apply; the set of types is closed (recordType is unexported).
type Record interface{ recordType() RecordType }

// RegisterBrokerRecord adds a broker or replaces its registration.
type RegisterBrokerRecord struct {
	BrokerID int32  `json:"broker_id"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
	// Listeners are all advertised client listeners, Host:Port's first
	// (optional: records written before it have none, and decode as such).
	Listeners []BrokerListener `json:"listeners,omitempty"`
	Rack      *string          `json:"rack,omitempty"`
	Fenced    bool             `json:"fenced,omitempty"`
	// Epoch is the broker epoch: the log offset of the record that
	// registered this incarnation (broker_epochs.go); Incarnation is the
	// process's incarnation id. Both absent in records of older builds.
	Epoch       int64  `json:"epoch,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	// LogDirs are the directory ids of the broker's online log
	// directories (KIP-858, dir_placement.go); absent in records of
	// older builds.
	LogDirs []Uuid `json:"log_dirs,omitempty"`
}

// BrokerFenceRecord fences or unfences a registered broker.
type BrokerFenceRecord struct {
	BrokerID int32 `json:"broker_id"`
	Fenced   bool  `json:"fenced"`
}

// TopicRecord creates a topic with no partitions; PartitionRecords follow it.
type TopicRecord struct {
	Name string `json:"name"`
	ID   Uuid   `json:"id"`
}

// PartitionRecord adds the next partition of a topic (Partition must equal
// the current partition count).
type PartitionRecord struct {
	TopicID        Uuid    `json:"topic_id"`
	Partition      int32   `json:"partition"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	// AddingReplicas and RemovingReplicas: a reassignment in progress
	// (reassign.go); omitted when none.
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
	// ELR and LastKnownELR: the eligible leader replicas (KIP-966,
	// elr.go); omitted when empty. A record that holds either is written
	// as payload version 2 (partitionV2).
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
	// Directories are the replicas' log directories in Replicas' order
	// (KIP-858, dir_placement.go); omitted when every one is
	// DirMigrating (and in records of older builds).
	Directories []Uuid `json:"directories,omitempty"`
	// LeaderRecoveryState (KIP-704, leader_recovery.go) is omitted while
	// RECOVERED.
	LeaderRecoveryState int8 `json:"leader_recovery_state,omitempty"`
}

// PartitionChangeRecord changes an existing partition. Nil fields are left
// unchanged. Applying it always bumps the partition epoch, and bumps the
// leader epoch when the leader changes.
type PartitionChangeRecord struct {
	TopicID   Uuid    `json:"topic_id"`
	Partition int32   `json:"partition"`
	Leader    *int32  `json:"leader,omitempty"`
	ISR       []int32 `json:"isr,omitempty"`
	Replicas  []int32 `json:"replicas,omitempty"`
	// AddingReplicas and RemovingReplicas set the reassignment in
	// progress when present (an empty list clears it); absent, it is
	// unchanged.
	AddingReplicas   *[]int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas *[]int32 `json:"removing_replicas,omitempty"`
	// BumpLeaderEpoch bumps the leader epoch although the leader stays
	// (Kafka's PartitionChangeBuilder sets the leader field to the current
	// leader for it): a change that removes a replica fences the removed
	// one. A record that sets it is written as payload version 2, which
	// builds that do not know the field refuse instead of ignoring it.
	BumpLeaderEpoch bool `json:"bump_leader_epoch,omitempty"`
	// ELR and LastKnownELR set the eligible leader replicas and the last
	// known leader (KIP-966, elr.go) when present (an empty list clears
	// them); absent, they are unchanged. With eligible leader replicas the
	// ISR may become empty: a non-nil empty ISR is encoded as
	// "empty_isr": true, since an empty list would be omitted. A record
	// that sets any of the three is written as payload version 3
	// (partitionChangeV3), which older builds refuse rather than ignore.
	ELR          *[]int32 `json:"elr,omitempty"`
	LastKnownELR *[]int32 `json:"last_known_elr,omitempty"`
	// LeaderRecoveryState sets the leader recovery state when present
	// (KIP-704, leader_recovery.go): RECOVERING at an unclean election,
	// RECOVERED when the leader reports it recovered.
	LeaderRecoveryState *int8 `json:"leader_recovery_state,omitempty"`
}

// partitionChangeJSON is PartitionChangeRecord's JSON layout: its fields
// plus empty_isr.
type partitionChangeJSON struct {
	partitionChangeFields
	EmptyISR bool `json:"empty_isr,omitempty"`
}

type partitionChangeFields PartitionChangeRecord

// MarshalJSON encodes r, with empty_isr for an ISR set to the empty list.
func (r PartitionChangeRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(partitionChangeJSON{partitionChangeFields(r), r.ISR != nil && len(r.ISR) == 0})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *PartitionChangeRecord) UnmarshalJSON(b []byte) error {
	var v partitionChangeJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = PartitionChangeRecord(v.partitionChangeFields)
	if v.EmptyISR {
		if len(r.ISR) > 0 {
			return fmt.Errorf("%w: empty_isr with isr %v", ErrCorrupt, r.ISR)
		}
		r.ISR = []int32{}
	}
	return nil
}

// setsELR reports whether applying r needs a build that knows eligible
// leader replicas.
func (r PartitionChangeRecord) setsELR() bool {
	return r.ELR != nil || r.LastKnownELR != nil || r.ISR != nil && len(r.ISR) == 0
}

// ConfigRecord sets (Value non-nil) or deletes (Value nil) one dynamic config
// of a topic (ResourceName = topic name) or broker (ResourceName = broker id,
// "" = cluster default).
type ConfigRecord struct {
	ResourceType int8    `json:"resource_type"`
	ResourceName string  `json:"resource_name"`
	Name         string  `json:"name"`
	Value        *string `json:"value"`
}

// ProducerIDsRecord hands the block of producer ids that ends before
// NextProducerID to broker BrokerID, like Kafka's ProducerIdsRecord: the
// controller allocates producer id blocks through the metadata log, so an
// id is never handed out twice, whatever happens to a broker's files.
// NextProducerID only grows.
type ProducerIDsRecord struct {
	BrokerID       int32 `json:"broker_id"`
	NextProducerID int64 `json:"next_producer_id"`
}

// RemoveTopicRecord deletes a topic and its partitions and configs.
type RemoveTopicRecord struct {
	ID Uuid `json:"id"`
}

func (RegisterBrokerRecord) recordType() RecordType  { return RecordRegisterBroker }
func (BrokerFenceRecord) recordType() RecordType     { return RecordBrokerFence }
func (TopicRecord) recordType() RecordType           { return RecordTopic }
func (PartitionRecord) recordType() RecordType       { return RecordPartition }
func (PartitionChangeRecord) recordType() RecordType { return RecordPartitionChange }
func (ConfigRecord) recordType() RecordType          { return RecordConfig }
func (RemoveTopicRecord) recordType() RecordType     { return RecordRemoveTopic }
func (ProducerIDsRecord) recordType() RecordType     { return RecordProducerIDs }

// recordVersion is the payload version written in every frame but those
// of payloadVersion's exceptions.
const recordVersion int8 = 1

// partitionChangeV2 is the payload version of a PartitionChangeRecord that
// sets BumpLeaderEpoch (a field version 1 did not have: a build that
// ignored it would compute another leader epoch than its peers).
const partitionChangeV2 int8 = 2

// partitionChangeV3 is the payload version of a PartitionChangeRecord
// that sets ELR, LastKnownELR or an empty ISR (eligible leader replicas,
// elr.go); it may set BumpLeaderEpoch too. partitionV2 is the payload
// version of a PartitionRecord that holds ELR or LastKnownELR. A build
// that ignored those fields would elect other leaders than its peers.
const (
	partitionChangeV3 int8 = 3
	partitionV2       int8 = 2
)

// payloadVersion is the version byte written for rec.
func payloadVersion(rec Record) int8 {
	switch r := rec.(type) {
	case PartitionChangeRecord:
		switch {
		case r.setsELR():
			return partitionChangeV3
		case r.BumpLeaderEpoch:
			return partitionChangeV2
		}
	case PartitionRecord:
		if len(r.ELR) > 0 || len(r.LastKnownELR) > 0 {
			return partitionV2
		}
	}
	return recordVersion
}

// knownVersion reports whether this build can decode payload version
// version of record type typ.
func knownVersion(version int8, typ RecordType) bool {
	switch {
	case version == recordVersion:
		return true
	case typ == RecordPartitionChange:
		return version == partitionChangeV2 || version == partitionChangeV3
	case typ == RecordPartition:
		return version == partitionV2
	}
	return false
}

// encodeRecord returns the JSON payload of rec.
func encodeRecord(rec Record) ([]byte, error) {
	switch rec.(type) {
	case RegisterBrokerRecord, BrokerFenceRecord, TopicRecord, PartitionRecord,
		PartitionChangeRecord, ConfigRecord, RemoveTopicRecord, ProducerIDsRecord, ScramCredentialRecord,
		ACLRecord, RemoveACLRecord, ClientQuotaRecord, UnregisterBrokerRecord, ReplicaDirsRecord, BrokerOfflineDirsRecord, BrokerCordonedDirsRecord,
		DelegationTokenRecord, FeatureLevelRecord:
	default:
		return nil, fmt.Errorf("%w: %T", ErrUnknownRecord, rec)
	}
	return json.Marshal(rec)
}

// decodeRecord parses a payload of the given version and type.
func decodeRecord(version int8, typ RecordType, payload []byte) (Record, error) {
	if !knownVersion(version, typ) {
		return nil, fmt.Errorf("%w: record version %d of type %d", ErrUnsupportedVersion, version, typ)
	}
	var (
		rec Record
		err error
	)
	switch typ {
	case RecordRegisterBroker:
		rec, err = decodeJSON[RegisterBrokerRecord](payload)
	case RecordBrokerFence:
		rec, err = decodeJSON[BrokerFenceRecord](payload)
	case RecordTopic:
		rec, err = decodeJSON[TopicRecord](payload)
	case RecordPartition:
		rec, err = decodeJSON[PartitionRecord](payload)
	case RecordPartitionChange:
		rec, err = decodeJSON[PartitionChangeRecord](payload)
	case RecordConfig:
		rec, err = decodeJSON[ConfigRecord](payload)
	case RecordRemoveTopic:
		rec, err = decodeJSON[RemoveTopicRecord](payload)
	case RecordProducerIDs:
		rec, err = decodeJSON[ProducerIDsRecord](payload)
	case RecordScramCredential:
		rec, err = decodeJSON[ScramCredentialRecord](payload)
	case RecordACL:
		rec, err = decodeJSON[ACLRecord](payload)
	case RecordRemoveACL:
		rec, err = decodeJSON[RemoveACLRecord](payload)
	case RecordClientQuota:
		rec, err = decodeJSON[ClientQuotaRecord](payload)
	case RecordUnregisterBroker:
		rec, err = decodeJSON[UnregisterBrokerRecord](payload)
	case RecordReplicaDirs:
		rec, err = decodeJSON[ReplicaDirsRecord](payload)
	case RecordBrokerOfflineDirs:
		rec, err = decodeJSON[BrokerOfflineDirsRecord](payload)
	case RecordBrokerCordonedDirs:
		rec, err = decodeJSON[BrokerCordonedDirsRecord](payload)
	case RecordDelegationToken:
		rec, err = decodeJSON[DelegationTokenRecord](payload)
	case RecordFeatureLevel:
		rec, err = decodeJSON[FeatureLevelRecord](payload)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownRecord, typ)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: record type %d: %w", ErrCorrupt, typ, err)
	}
	return rec, nil
}

func decodeJSON[T any](payload []byte) (T, error) {
	var v T
	err := json.Unmarshal(payload, &v)
	return v, err
}
