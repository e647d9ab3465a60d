// Package shards runs a coordinator's shards: one goroutine per loaded
// partition of its internal topic. The group coordinator
// (__consumer_offsets), the transaction coordinator (__transaction_state)
// and the share coordinator (__share_group_state) load, look up, wait for
// and unload their partitions the same way, so that lifecycle is written
// once here (as Kafka's CoordinatorRuntime serves all three).
//
// A coordinator keeps a *Set of its own shard type, which implements
// Shard:
//
//	type Coordinator struct{ shards *shards.Set[*shard] }
//
//	c.shards = shards.New[*shard]()
//	// this node leads partition p now:
//	if !c.shards.Load(p, func() *shard { return newShard(c, p) }) {
//		return ErrClosed
//	}
//	// a request for partition p:
//	s, ok := c.shards.Get(p) // !ok: NOT_COORDINATOR
//	// this node no longer leads p:
//	c.shards.Unload(p)
//	// shutdown:
//	c.shards.Close()
//
// A shard takes its callers' work through a Gate (NewGate): Gate.Call hands
// a closure to the shard goroutine, or answers with the error code of a
// shard that is loading, failed to load or stopped. The shards themselves
// (reading the log, serving requests on their goroutine, writing) stay in
// each coordinator's package.
package shards
