// Package share is samsa's share coordinator (KIP-932): the durable state of
// every share-partition (a share group's view of one topic partition: its
// start offset and the delivery state of the records in flight), kept in the
// internal compacted topic __share_group_state.
//
// Partition leaders (broker/share) read a share-partition's state when they
// first serve it and write it back whenever it changes; the group
// coordinator initializes it when a share group first gets the partition
// assigned, and reads, alters and deletes it for the admin APIs
// (DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets, DeleteGroups). All of them go through a
// Persister, which routes each call to the node leading the key's
// __share_group_state partition (a local call, or Kafka's own
// InitializeShareGroupState / ReadShareGroupState / WriteShareGroupState /
// DeleteShareGroupState / ReadShareGroupStateSummary on the wire).
//
// This package holds only the interface and its types, and imports nothing
// of samsa, so that the group coordinator and the partition leaders can
// use it; the share coordinator and the broker's Persister are in
// coordinator/sharecoord.
package share
