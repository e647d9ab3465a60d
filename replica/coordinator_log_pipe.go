package replica

// AppendUncommitted writes batch as leader, stamped with the leader epoch,
// and returns the log end offset after it without waiting for the ISR
// (coordinator.PipelinedLog): the group coordinator appends its writes in
// order, one after the other, and completes each answer when the high
// watermark passes its end offset (WaitCommitted), as Kafka's
// CoordinatorRuntime does, instead of holding its shard for each write's
// replication. An ISR below min.insync.replicas refuses the append with
// NOT_ENOUGH_REPLICAS, as Append does; the error wraps the Kafka error.
func (c CoordinatorLog) AppendUncommitted(batch []byte) (int64, error) {
	end, _, err := c.AppendUncommittedInEpoch(batch)
	return end, err
}

// HighWatermark returns the partition's high watermark: the shard's
// writes below it are committed.
func (c CoordinatorLog) HighWatermark() int64 { return c.p.log.HighWatermark() }
