package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Broker epochs, as in KRaft: each registration of a new incarnation of a
// broker (a process start, RegisterBroker with a new Incarnation) is
// recorded at a new log offset, which is the broker's epoch from then on
// (decideRegisterBroker). The registration starts fenced; the broker's
// heartbeats unfence it once its metadata has caught up with that offset.
// Heartbeats and ISR changes carrying another epoch come from an older
// incarnation and are STALE_BROKER_EPOCH.

// HeartbeatResult is the controller's answer to a broker's heartbeat.
type HeartbeatResult struct {
	// Code is a Kafka error code: BROKER_ID_NOT_REGISTERED,
	// STALE_BROKER_EPOCH, or 0.
	Code int16
	// CaughtUp: the broker's metadata offset reached its registration.
	CaughtUp bool
	Fenced   bool
}

// CheckBrokerEpoch returns STALE_BROKER_EPOCH when epoch is not broker
// id's current epoch (-1 is accepted: a request without one, such as
// Kafka's AlterPartition before its broker knows an epoch), and
// BROKER_ID_NOT_REGISTERED for an unknown broker.
func (img *Image) CheckBrokerEpoch(id int32, epoch int64) int16 {
	b, ok := img.Brokers[id]
	switch {
	case !ok:
		return kerr.BrokerIDNotRegistered.Code
	case epoch != -1 && epoch != b.Epoch:
		return kerr.StaleBrokerEpoch.Code
	}
	return 0
}

// BrokerHeartbeat handles a remote broker's heartbeat (Kafka's
// BrokerHeartbeat without want_fence or want_shut_down): the epoch must
// be current (-1 is not: every registered broker knows its epoch), the
// broker is alive now, and a fenced broker is unfenced once
// metadataOffset reached its registration.
func (c *Controller) BrokerHeartbeat(id int32, epoch, metadataOffset int64) (HeartbeatResult, error) {
	img := c.Image()
	b, ok := img.Brokers[id]
	if !ok {
		return HeartbeatResult{Code: kerr.BrokerIDNotRegistered.Code, Fenced: true}, nil
	}
	if epoch != b.Epoch {
		return HeartbeatResult{Code: kerr.StaleBrokerEpoch.Code, Fenced: b.Fenced}, nil
	}
	res := HeartbeatResult{CaughtUp: metadataOffset >= b.Epoch}
	c.liveness.Lock()
	c.liveness.lastSeen[id] = c.opts.Now()
	c.liveness.Unlock()
	if b.Fenced && res.CaughtUp {
		if err := c.FenceBroker(id, false); err != nil {
			return res, err
		}
	}
	res.Fenced = c.Image().Brokers[id].Fenced
	return res, nil
}
