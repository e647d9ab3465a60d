package broker

import "github.com/samsa-broker/samsa/controller"

// catchUpGate returns the controller's Options.CaughtUp for this node: a
// broker publishes metadata to its logs, replicas and coordinators only
// once the image holds the registration of this process (its incarnation
// id). That record is committed after the process started, so an image
// holding it holds everything the quorum committed before; the images a
// restarting node replays from its own snapshot and log until then are
// history, and reconciling against them made it act as the leader of
// epochs the cluster had left (docs/DURABILITY.md, finding 3). It is
// Kafka's initial catch-up: a broker's metadata publishers are installed
// when the loader reached the quorum's high-water mark, and the controller
// unfences it once its metadata offset reached its registration.
//
// The wait is bounded by the registration's (registrationTimeout, Kafka's
// initial.broker.registration.timeout.ms): a node that cannot register
// does not start, as in Kafka. A lone node registers with itself at once;
// a cluster restarted as a whole registers as soon as a majority of its
// voters is up. A node without the broker role hosts no partition or
// coordinator and publishes every image as it is applied (nil).
func (n *Node) catchUpGate() func(*controller.Image) bool {
	if !n.cfg.HasRole("broker") {
		return nil
	}
	incarnation := n.incarnation.String()
	return func(img *controller.Image) bool {
		b, ok := img.Brokers[n.cfg.NodeID]
		return ok && b.Incarnation == incarnation
	}
}
