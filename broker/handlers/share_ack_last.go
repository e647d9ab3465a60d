package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
)

// lastAckPerPartition returns a ShareAcknowledge's topics with each topic
// and partition named once, as Kafka 4.4 reads them
// (KafkaApis.getAcknowledgeBatchesFromShareAcknowledgeRequest puts them
// in a map keyed by topic id and partition): a partition named more than
// once keeps the acknowledgement batches of its last entry only (the
// earlier ones are not applied), and is answered once. Topics and
// partitions keep the order of their first entry.
func lastAckPerPartition(topics []kmsg.ShareAcknowledgeRequestTopic) []kmsg.ShareAcknowledgeRequestTopic {
	var out []kmsg.ShareAcknowledgeRequestTopic
	topicAt := make(map[[16]byte]int)
	partAt := make(map[[16]byte]map[int32]int)
	dup := false
	for _, t := range topics {
		ti, ok := topicAt[t.TopicID]
		if !ok {
			ti = len(out)
			topicAt[t.TopicID] = ti
			partAt[t.TopicID] = make(map[int32]int)
			nt := t
			nt.Partitions = nil
			out = append(out, nt)
		} else {
			dup = true
		}
		for _, p := range t.Partitions {
			if pi, ok := partAt[t.TopicID][p.Partition]; ok {
				out[ti].Partitions[pi] = p // the last entry wins
				dup = true
				continue
			}
			partAt[t.TopicID][p.Partition] = len(out[ti].Partitions)
			out[ti].Partitions = append(out[ti].Partitions, p)
		}
	}
	if !dup {
		return topics
	}
	return out
}

// lastFetchEntries returns, for each partition a ShareFetch names, the
// topic and partition index of its last entry. Kafka 4.4 reads
// piggybacked acknowledgements into a map keyed by topic id and
// partition (KafkaApis.getAcknowledgeBatchesFromShareFetchRequest): only
// the last entry's acknowledgements are applied, none when that entry
// has none.
func lastFetchEntries(topics []kmsg.ShareFetchRequestTopic) map[share.TopicPartition][2]int {
	last := make(map[share.TopicPartition][2]int)
	for ti, t := range topics {
		for pi, p := range t.Partitions {
			last[share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}] = [2]int{ti, pi}
		}
	}
	return last
}
