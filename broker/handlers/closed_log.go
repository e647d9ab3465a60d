package handlers

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// closedLogCode is the error code of a consumer Fetch or a Produce whose
// partition log was closed under it (err wraps storage.ErrClosed) while its
// log directory is online: the partition was deleted, or is being recreated
// under the same name, after the request looked it up. The sequence: the
// request takes the metadata image and the partition's log; DeleteTopics
// commits; the log syncer closes the log; the read or append then fails with
// storage.ErrClosed.
//
// Kafka answers a request for a partition its ReplicaManager no longer hosts
// from the current metadata (ReplicaManager.getPartitionOrError):
// UNKNOWN_TOPIC_OR_PARTITION when the topic is gone (UNKNOWN_TOPIC_ID when
// the request names it by id), NOT_LEADER_OR_FOLLOWER while the metadata still
// has it. Both make clients refresh their metadata and retry. samsa used to
// answer KAFKA_STORAGE_ERROR (and log an ERROR), the code of a failed log
// directory, on which kafka-go's Reader gives up: its own test "topic being
// recreated will return an error" (TestReader) got KAFKA_STORAGE_ERROR instead
// of OFFSET_OUT_OF_RANGE (compat-tests/suites). The follower fetch path
// (replica/serve.go) already answered this way.
//
// It returns 0 when err is not such a closed-log error.
func (d *Deps) closedLogCode(err error, t *controller.Topic, partition int32, byID bool) int16 {
	if !errors.Is(err, storage.ErrClosed) || t == nil {
		return 0
	}
	if d.Logs != nil && d.Logs.PartitionOffline(storage.TopicPartition{Topic: t.Name, Partition: partition}) {
		return 0 // a failed log directory: KAFKA_STORAGE_ERROR
	}
	return unhostedPartitionCode(d.Controller.Image(), t, byID)
}

// unhostedPartitionCode is Kafka's answer for a partition of topic t that this
// node no longer hosts, by the current image img: the topic is gone (or was
// recreated with another id, for a request by id), or it is still there.
func unhostedPartitionCode(img *controller.Image, t *controller.Topic, byID bool) int16 {
	if byID {
		if topicByID(img, t.ID) == nil {
			return kerr.UnknownTopicID.Code
		}
		return kerr.NotLeaderForPartition.Code
	}
	if topicByName(img, t.Name) == nil {
		return kerr.UnknownTopicOrPartition.Code
	}
	return kerr.NotLeaderForPartition.Code
}
