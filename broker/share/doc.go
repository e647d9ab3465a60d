// Package share is the partition leader's side of share groups (KIP-932,
// "queues for Kafka"): the share sessions of ShareFetch and
// ShareAcknowledge, and one share-partition per share group and
// partition led here (Kafka's SharePartitionManager and SharePartition).
//
// A share-partition tracks the records in flight between its start offset
// (SPSO: everything below is acknowledged or archived) and its end offset
// (SPEO: nothing at or past it was delivered yet). Each offset in flight
// is Available, Acquired (by one member, until its acquisition lock
// expires after share.record.lock.duration.ms), Acknowledged or Archived,
// with a delivery count; a record released or expired for the
// share.delivery.count.limit-th time is archived. Records keep the
// in-flight batch they were first acquired in: a redelivery answers
// AcquiredRecords per in-flight batch, and delivery throttling hands the
// records of a batch delivered ceil(limit/2) times or more out in halving
// pieces, a record's last delivery alone (acquire.go). The start offset moves
// over finished records and over records the log no longer holds
// (retention, DeleteRecords). At most share.partition.max.record.locks
// records are in flight.
//
// State lives in a coordinator/share.Persister: a share-partition is read
// with this node's leader epoch when first served (its start offset chosen
// from share.auto.offset.reset when the state has none) and written after
// every change that must survive, acquired records as available; an
// acknowledgement returns only once written. A failed write, a fenced
// leader or a change of leader (Reconcile) drops the share-partition: the
// next request reads the durable state again, so records acquired here
// but not acknowledged are delivered again (at least once).
//
// A share session belongs to the connection whose ShareFetch opened it:
// when that connection closes (ConnectionClosed) the session goes and its
// member's acquired records are released at once, as Kafka 4.4 does, so
// another member gets them without waiting for their locks to expire.
//
//	m := share.NewManager(share.Options{Persister: p, GroupConfig: img.GroupConfig})
//	defer m.Close()
//	sf := m.FetchSessionOn(connID, share.SessionKey{Group: g, Member: id}, epoch, parts, forgotten, hasAcks)
//	res := m.Fetch(ctx, share.Target{Key: k, Log: log, LeaderEpoch: e}, share.FetchRequest{Member: id, MaxBytes: 1 << 20})
//	code := m.Acknowledge(ctx, target, share.Acknowledgement{Member: id, Batches: acks})
//	m.ConnectionClosed(connID) // the client's connection closed
//
// Lock order: Manager.mu, then sharePartition.mu; sharePartition.writeMu
// comes before both and is the one lock held across IO (the persister's
// Write, a fetch's log read).
package share
