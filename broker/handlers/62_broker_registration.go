package handlers

import (
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// BrokerRegistration, key 62, versions 0-4: a broker registers with the
// active controller (on a controller listener only).
//
//   - Every listener of the request is registered by name; the first is
//     the broker's default address, given to clients whose listener the
//     broker lacks (and the only one in images from before listeners were
//     recorded).
//   - A new incarnation_id (a broker process start) is a new registration:
//     recorded fenced (the old incarnation's leaderships move away first),
//     with the registration's log offset as the broker epoch, and unfenced
//     by a heartbeat whose metadata offset reached it (Kafka's rule). A
//     retry with the same incarnation changes nothing and gets the same
//     epoch.
//   - v3+ previous_broker_epoch is the epoch of the broker's last clean
//     shutdown (-1: a crash or a first start; also before v3): a new
//     incarnation without its current epoch leaves every ISR and the
//     eligible leader replicas (KIP-966, controller/elr.go).
//   - v2+ log_dirs are the directory ids of the broker's online log
//     directories: a replica placed on a broker with one gets it, on a
//     broker with several the broker picks and reports it
//     (controller/dir_placement.go).
//   - A wrong cluster id is INCONSISTENT_CLUSTER_ID; a node that is not
//     the active controller answers NOT_CONTROLLER.
func handleBrokerRegistration(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	img := d.Controller.Image()
	switch {
	case req.ClusterID != img.ClusterID:
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	case len(req.Listeners) == 0:
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	l := req.Listeners[0]
	b := controller.Broker{ID: req.BrokerID, Host: l.Host, Port: int32(l.Port), Rack: req.Rack}
	for _, l := range req.Listeners {
		b.Listeners = append(b.Listeners, controller.BrokerListener{Name: strings.ToUpper(l.Name), Host: l.Host, Port: int32(l.Port)})
	}
	if old, ok := img.Brokers[req.BrokerID]; ok {
		b.Fenced = old.Fenced
	}
	if req.IncarnationID != ([16]byte{}) {
		b.Incarnation = controller.Uuid(req.IncarnationID).String()
	}
	for _, dir := range req.LogDirs {
		b.LogDirs = append(b.LogDirs, controller.Uuid(dir))
	}
	if err := d.Controller.RegisterIncarnation(b, req.PreviousBrokerEpoch); err != nil {
		resp.ErrorCode = controllerErrorCode(err)
		return resp, nil
	}
	if d.AddObserver != nil {
		// A broker-only node receives the metadata log as a non-voter of
		// the quorum, at its registered address.
		if err := d.AddObserver(req.BrokerID, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))); err != nil {
			d.Logger.Warn("cannot add a broker to the metadata quorum", "broker", req.BrokerID, "err", err)
			resp.ErrorCode = controllerErrorCode(err)
			return resp, nil
		}
	}
	resp.BrokerEpoch = d.Controller.Image().Brokers[req.BrokerID].Epoch
	return resp, nil
}

// BrokerHeartbeat, key 63, versions 0-2: a registered broker's liveness;
// v1 offline_log_dirs lists its failed log directories (KIP-858), v2
// cordoned_log_dirs its cordoned ones (KIP-1066; null: unchanged, empty:
// none), which get no new replicas.
// broker_epoch must be the epoch of the broker's registration, else
// STALE_BROKER_EPOCH (an older incarnation). A heartbeat whose
// current_metadata_offset reached the registration is caught up and
// unfences a fenced broker (it then takes over leaderless partitions
// whose ISR holds it); before that it stays fenced. want_shut_down moves
// its leaderships away (controlled shutdown) and is answered
// should_shut_down once it leads nothing.
func handleBrokerHeartbeat(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	img := d.Controller.Image()
	if code := img.CheckBrokerEpoch(req.BrokerID, req.BrokerEpoch); code != 0 || req.BrokerEpoch == -1 {
		if code == 0 {
			code = kerr.StaleBrokerEpoch.Code
		}
		resp.ErrorCode = code
		resp.IsFenced = true
		if b, ok := img.Brokers[req.BrokerID]; ok {
			resp.IsFenced = b.Fenced
		}
		return resp, nil
	}
	resp.IsCaughtUp = req.CurrentMetadataOffset >= img.Brokers[req.BrokerID].Epoch
	if req.WantShutdown || req.WantFence {
		if err := d.Controller.FenceBroker(req.BrokerID, true); err != nil {
			resp.ErrorCode = controllerErrorCode(err)
		}
	} else {
		res, err := d.Controller.BrokerHeartbeat(req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset)
		resp.ErrorCode, resp.IsCaughtUp = res.Code, res.CaughtUp
		if err != nil {
			resp.ErrorCode = controllerErrorCode(err)
		}
		if resp.ErrorCode == 0 {
			resp.ErrorCode = reportOfflineLogDirs(d, req)
		}
		if resp.ErrorCode == 0 && req.CordonedLogDirs != nil {
			resp.ErrorCode = reportCordonedLogDirs(d, req)
		}
	}
	img = d.Controller.Image()
	resp.IsFenced = img.Brokers[req.BrokerID].Fenced
	resp.ShouldShutdown = req.WantShutdown && resp.ErrorCode == 0 && leadsNothing(img, req.BrokerID)
	return resp, nil
}

// reportOfflineLogDirs records a v1 heartbeat's offline_log_dirs
// (KIP-858, controller/log_dirs.go) and returns its error code.
func reportOfflineLogDirs(d *Deps, req *kmsg.BrokerHeartbeatRequest) int16 {
	if len(req.OfflineLogDirs) == 0 {
		return 0
	}
	dirs := make([]controller.Uuid, len(req.OfflineLogDirs))
	for i, dir := range req.OfflineLogDirs {
		dirs[i] = controller.Uuid(dir)
	}
	code, err := d.Controller.ReportOfflineLogDirs(req.BrokerID, req.BrokerEpoch, dirs)
	if err != nil && code == 0 {
		code = controllerErrorCode(err)
	}
	return code
}

// leadsNothing reports whether broker id leads no partition.
func leadsNothing(img *controller.Image, id int32) bool {
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return false
			}
		}
	}
	return true
}

// AllocateProducerIDs, key 67, version 0: a block of producer ids for a
// broker, committed to the metadata log before it is handed out.
func handleAllocateProducerIDs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	first, size, err := d.Controller.AllocateProducerIDs(req.BrokerID, 0)
	if err != nil {
		resp.ErrorCode = controllerErrorCode(err)
		return resp, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, int32(size)
	return resp, nil
}

// AlterPartition, key 56, versions 2-3 (topic ids): a partition leader's
// ISR change, checked against the leader and partition epochs, with the
// leader's recovery state (KIP-704, controller/leader_recovery.go).
func handleAlterPartition(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	// A leader of an older incarnation of its broker is fenced as a whole.
	if code := d.Controller.Image().CheckBrokerEpoch(req.BrokerID, req.BrokerEpoch); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID // sic: kmsg spells it TopidID
		for _, rp := range rt.Partitions {
			isr := rp.NewISR
			if r.Header.APIVersion >= 3 {
				isr = make([]int32, 0, len(rp.NewEpochISR))
				for _, e := range rp.NewEpochISR {
					isr = append(isr, e.BrokerID)
				}
			}
			p, code, _ := d.Controller.AlterPartitionRecovery(controller.AlterPartition{
				TopicID: controller.Uuid(rt.TopicID), Partition: rp.Partition, LeaderID: req.BrokerID,
				LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, NewISR: isr,
			}, rp.LeaderRecoveryState)
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch = p.Leader, p.LeaderEpoch, p.PartitionEpoch
			sp.ISR, sp.LeaderRecoveryState = p.ISR, p.LeaderRecoveryState
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// controllerErrorCode maps a controller error to its Kafka code.
func controllerErrorCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.Is(err, controller.ErrNotController):
		return kerr.NotController.Code
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, controller.ErrInvalidBroker):
		return kerr.InvalidRequest.Code
	}
	return kerr.UnknownServerError.Code
}

// reportCordonedLogDirs records a v2 heartbeat's cordoned_log_dirs.
func reportCordonedLogDirs(d *Deps, req *kmsg.BrokerHeartbeatRequest) int16 {
	dirs := make([]controller.Uuid, len(req.CordonedLogDirs))
	for i, dir := range req.CordonedLogDirs {
		dirs[i] = controller.Uuid(dir)
	}
	code, err := d.Controller.ReportCordonedLogDirs(req.BrokerID, req.BrokerEpoch, dirs)
	if err != nil {
		return controllerErrorCode(err)
	}
	return code
}
