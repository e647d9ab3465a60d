package controller

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds the cluster-wide min.insync.replicas that eligible
// leader replicas (KIP-966) require, as Kafka 4.4's controller keeps it:
//
//   - When a controller activates on an empty metadata log with
//     eligible.leader.replicas.version >= 1 (every new Kafka 4.4 cluster),
//     it writes a ConfigRecord BROKER "" min.insync.replicas with its own
//     static min.insync.replicas (server.properties, else the default 1)
//     in the bootstrap batch (ActivationRecordsGenerator.recordsForEmptyLog).
//     DescribeConfigs then shows min.insync.replicas with source
//     DYNAMIC_DEFAULT_BROKER_CONFIG on every broker and topic, and the
//     cluster-default resource (BROKER "") lists it.
//   - Activation on a non-empty log writes nothing. The record comes with
//     the feature instead: an UpdateFeatures that raises
//     eligible.leader.replicas.version above 0 adds it when the cluster
//     level has none, and removes every broker-level min.insync.replicas
//     (ConfigurationControlManager.maybeGenerateElrSafetyRecords).
//   - While ELR is enabled, altering a broker-level min.insync.replicas
//     (set or delete, even of one that is not set) and deleting the
//     cluster-level one are INVALID_CONFIG.
//
// samsa's clusters always have eligible.leader.replicas.version 1 (it
// cannot be changed), so "ELR on" and "the cluster level has
// min.insync.replicas" go together. A metadata log written by an older
// samsa (ELR on, no such record) is such an upgrade: the active
// controller adds the record, and drops broker-level values, as Kafka's
// feature upgrade does. decideClusterMinISR serves both cases: on a fresh
// log the record is among the first the active controller writes, and on
// an older log it is the first change after the upgrade.

// minISRName is the setting the cluster level must hold while ELR is on.
const minISRName = "min.insync.replicas"

// Kafka 4.4's messages for the refused changes (INVALID_CONFIG).
const (
	msgBrokerMinISRAltered  = "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
	msgClusterMinISRRemoved = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
)

// decideClusterMinISR returns the records that give the cluster level
// (BROKER "") min.insync.replicas = static when it has none, with the
// deletion of every broker-level min.insync.replicas, and the ids of the
// brokers whose value goes. It returns nothing when the cluster level has
// one.
func decideClusterMinISR(img *Image, static int32) (recs []Record, removed []string) {
	if _, ok := img.BrokerConfigs[""][minISRName]; ok {
		return nil, nil
	}
	v := strconv.Itoa(int(static))
	recs = append(recs, ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: minISRName, Value: &v})
	for _, broker := range sortedKeys(img.BrokerConfigs) {
		if _, ok := img.BrokerConfigs[broker][minISRName]; ok && broker != "" {
			recs = append(recs, ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: broker, Name: minISRName})
			removed = append(removed, broker)
		}
	}
	return recs, removed
}

// EnsureClusterMinISR writes the cluster-wide min.insync.replicas that
// eligible leader replicas require when the metadata has none (a fresh
// cluster, or one an older samsa wrote), with static, this controller's
// static min.insync.replicas, as its value, as Kafka 4.4's activation
// does. It does nothing without eligible leader replicas, or when the
// value is there. Only the active controller writes (ErrNotController
// elsewhere). written reports whether it wrote the record.
func (c *Controller) EnsureClusterMinISR(static int32) (written bool, err error) {
	if !c.elr(c.machine.Image()).enabled() {
		return false, nil
	}
	if _, ok := c.machine.Image().BrokerConfigs[""][minISRName]; ok {
		return false, nil // the common case, without the write lock
	}
	var removed []string
	err = c.write(false, func(img *Image) []Record {
		var recs []Record
		recs, removed = decideClusterMinISR(img, static)
		written = len(recs) > 0
		return recs
	})
	if err != nil {
		return false, err
	}
	if written {
		c.opts.Logger.Info("controller: generated the cluster-level min.insync.replicas that eligible leader replicas require (KIP-966)",
			"min.insync.replicas", static, "removed_broker_level", removed)
	}
	return written, nil
}

// checkMinISRAlter refuses the min.insync.replicas changes Kafka 4.4
// refuses while eligible leader replicas are enabled: any operation on a
// broker's own min.insync.replicas, and the removal of the cluster-level
// one (a DELETE, or a legacy AlterConfigs that leaves it out, which
// reaches here as a DELETE).
func checkMinISRAlter(broker string, ops []ConfigOp) (int16, string) {
	for _, op := range ops {
		if op.Name != minISRName {
			continue
		}
		if broker != "" {
			return kerr.InvalidConfig.Code, msgBrokerMinISRAltered
		}
		if op.Op == OpDelete {
			return kerr.InvalidConfig.Code, msgClusterMinISRRemoved
		}
	}
	return 0, ""
}
