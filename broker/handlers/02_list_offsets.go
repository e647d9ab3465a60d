package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// ListOffsets, key 2, versions 1-11.
//
//   - timestamp -2 (earliest) answers the log start offset; -1 (latest) the
//     high watermark, or the last stable offset for read_committed (v2+;
//     timestamp lookups are bounded the same way); -3 (v7+) the offset and
//     timestamp of the record with the largest timestamp; -4 (v8+,
//     earliest local) the log start offset, as we have no tiered storage;
//     -5 (v9+, latest tiered) and -6 (v11+, earliest pending upload,
//     KIP-1023) -1, offset and leader epoch, for the same reason (Kafka's
//     UnifiedLog answers both so when remote storage is off). A special
//     timestamp older than the request's version, or any other negative
//     one, is UNSUPPORTED_VERSION (timestampUnsupported). Any other timestamp
//     finds the first record with timestamp >= it through the time index;
//     none is offset -1, timestamp -1.
//   - v1 drops the v0 max_num_offsets list; v4 adds leader_epoch and
//     current_leader_epoch (fenced / unknown as in Fetch); v6 flexible; v10
//     timeout_ms (nothing to wait for here); v11 only allows -6.
//   - A partition named twice is answered once, INVALID_REQUEST, before
//     anything else is checked (as Kafka 4.4).
func handleListOffsets(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	img := d.Controller.Image()
	// A partition asked for twice: Kafka 4.4 (ListOffsetsRequest's
	// duplicatePartitions, checked first) answers it once, INVALID_REQUEST.
	type tp struct {
		topic string
		part  int32
	}
	asked := map[tp]int{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			asked[tp{rt.Topic, rp.Partition}]++
		}
	}
	answered := map[tp]bool{}
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := topicByName(img, rt.Topic)
		for _, rp := range rt.Partitions {
			k := tp{rt.Topic, rp.Partition}
			if answered[k] {
				continue
			}
			answered[k] = true
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if asked[k] > 1 {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				sp.ErrorCode = kerr.InvalidRequest.Code
			} else if timestampUnsupported(rp.Timestamp, r.Header.APIVersion) {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			} else {
				d.listOffset(img, t, &rp, &sp, req.IsolationLevel)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// timestampUnsupported reports whether a ListOffsets request of version v
// may not ask for timestamp ts: a special (negative) timestamp older than
// the version that introduced it (-3 v7, -4 v8, -5 v9, -6 v11; -1 and -2
// from v1), or a negative one that is none of them. Kafka 4.4's
// ReplicaManager (isListOffsetsTimestampUnsupported) answers those
// partitions UNSUPPORTED_VERSION before it looks them up, so an unknown
// topic asked for -7 gets it too.
func timestampUnsupported(ts int64, v int16) bool {
	if ts >= 0 {
		return false
	}
	var since int16
	switch ts {
	case -1, -2:
		since = 1
	case -3:
		since = 7
	case -4:
		since = 8
	case -5:
		since = 9
	case -6:
		since = 11
	default:
		return true
	}
	return v < since
}

func (d *Deps) listOffset(img *controller.Image, t *controller.Topic, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition, isolation int8) {
	sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
	ref := d.lookupPartitionEpoch(img, t, rp.Partition, rp.CurrentLeaderEpoch)
	if ref.code != 0 {
		sp.ErrorCode = ref.code
		return
	}
	l := ref.log
	_, sp.LeaderEpoch = ref.currentLeader()
	switch rp.Timestamp {
	case -2, -4:
		sp.Offset = l.LogStartOffset()
	case -1:
		sp.Offset = l.HighWatermark()
		if isolation == 1 {
			sp.Offset = min(l.LastStableOffset(), sp.Offset)
		}
	case -3:
		sp.Timestamp, sp.Offset = l.MaxTimestamp()
	case -5, -6:
		// No tiered storage: nothing in remote storage nor pending
		// upload, offset and epoch unknown, as Kafka answers without
		// remote storage.
		sp.Offset, sp.LeaderEpoch = -1, -1
	default:
		if rp.Timestamp < 0 {
			sp.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		off, ts, ok := l.OffsetForTimestamp(rp.Timestamp)
		bound := l.HighWatermark()
		if isolation == 1 {
			bound = min(l.LastStableOffset(), bound)
		}
		if ok && off < bound {
			sp.Offset, sp.Timestamp = off, ts
		} else {
			// No record at or after the timestamp: Kafka answers
			// offset, timestamp and leader epoch all -1.
			sp.LeaderEpoch = -1
		}
	}
}
