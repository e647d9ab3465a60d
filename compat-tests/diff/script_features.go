package diff

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptFeatures covers UpdateFeatures: an unknown feature (the first step
// of Sarama's TestFuncAdminUpdateFeatures), a known one at the level it
// has (validate-only and not: Kafka writes a record that changes
// nothing), a downgrade without a downgrade type, a level below 0 or above
// the supported range and an unknown upgrade type; then accepted changes
// (scriptFeatureChanges), each undone before the section ends.
func scriptFeatures(s *Session) error {
	each(kmsg.UpdateFeatures, func(v int16) {
		mk := func(validateOnly bool, upgradeType int8, name string, level int16) *kmsg.UpdateFeaturesRequest {
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, upgradeType
			req.FeatureUpdates = append(req.FeatureUpdates, u)
			return req
		}
		s.Do("unknown-feature", v, mk(false, 1, "diff.no.such.feature", 1))
		s.Do("current-level", v, mk(false, 1, "transaction.version", 2))
		s.Do("downgrade-without-type", v, mk(false, 1, "transaction.version", 1))
		s.Do("negative-level", v, mk(false, 1, "transaction.version", -1))
		s.Do("above-supported", v, mk(false, 1, "transaction.version", 99))
		if v >= 1 {
			s.Do("current-level-validate-only", v, mk(true, 1, "transaction.version", 2))
			s.Do("unknown-upgrade-type", v, mk(false, 9, "transaction.version", 2))
		}
		// metadata.version (33 on both, supported 7-33): the current
		// level validated only, a lower one without a downgrade type,
		// one above the range.
		if v >= 1 {
			s.Do("metadata-version-current-validate-only", v, mk(true, 1, "metadata.version", 33))
		}
		s.Do("metadata-version-downgrade-without-type", v, mk(false, 1, "metadata.version", 27))
		s.Do("metadata-version-above-supported", v, mk(false, 1, "metadata.version", 34))
	})
	return scriptFeatureChanges(s)
}

// featureUpdates is an UpdateFeatures request of version v.
func featureUpdates(validateOnly bool, upgradeType int8, nameLevels ...any) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
	for i := 0; i+1 < len(nameLevels); i += 2 {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = nameLevels[i].(string), int16(nameLevels[i+1].(int)), upgradeType
		u.AllowDowngrade = upgradeType != 1
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	return req
}

// scriptFeatureChanges changes feature levels as `kafka-features
// downgrade` and `upgrade` do, on both brokers, and compares the answers
// and what ApiVersions (`kafka-features describe`) shows after each
// change: transaction.version 2 → 1 → 2 (with a validate-only downgrade
// that changes nothing, and a "downgrade" to a newer level refused),
// group.version, share.version and streams.version 1/2 → 0 → back (their
// heartbeats answer UNSUPPORTED_VERSION at 0), and the metadata.version downgrade
// both refuse. Every change is undone, so the sections after this one
// see a fresh cluster's levels.
func scriptFeatureChanges(s *Session) error {
	describe := func(name string, want map[string]int16) error {
		if err := s.settleFeatures(want); err != nil {
			return err
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "diff", "1.0"
		s.Do(name, 4, req)
		return nil
	}
	s.Do("tv-downgrade-validate-only", 1, featureUpdates(true, 2, "transaction.version", 1))
	if err := describe("after-tv-downgrade-validate-only", map[string]int16{"transaction.version": 2}); err != nil {
		return err
	}
	s.Do("tv-downgrade", 1, featureUpdates(false, 2, "transaction.version", 1))
	if err := describe("after-tv-downgrade", map[string]int16{"transaction.version": 1}); err != nil {
		return err
	}
	if err := s.fenceFlow("fence-tv1", "diff-features-fence-tv1"); err != nil {
		return err
	}
	s.Do("tv-downgrade-to-newer", 2, featureUpdates(false, 2, "transaction.version", 2))
	s.Do("tv-downgrade-v0", 0, featureUpdates(false, 2, "transaction.version", 0))
	s.Do("tv-disable", 1, featureUpdates(false, 2, "transaction.version", 0))
	if err := describe("after-tv-downgrade-to-0", map[string]int16{"transaction.version": 0}); err != nil {
		return err
	}
	s.Do("tv-upgrade", 2, featureUpdates(false, 1, "transaction.version", 2))
	if err := describe("after-tv-upgrade", map[string]int16{"transaction.version": 2}); err != nil {
		return err
	}
	if err := s.fenceFlow("fence-tv2", "diff-features-fence-tv2"); err != nil {
		return err
	}
	s.Do("metadata-version-safe-downgrade", 1, featureUpdates(false, 2, "metadata.version", 32))
	s.Do("metadata-version-unsafe-downgrade", 1, featureUpdates(false, 3, "metadata.version", 22))

	s.Do("groups-off", 1, featureUpdates(false, 3, "group.version", 0, "share.version", 0))
	if err := describe("after-groups-off", map[string]int16{"group.version": 0, "share.version": 0}); err != nil {
		return err
	}
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = "diff-features-cg", "diff-features-member-0000", 30000, []string{"diff-features"}
	s.Do("group-version-0", 1, cg)
	sg := kmsg.NewPtrShareGroupHeartbeatRequest()
	sg.GroupID, sg.MemberID, sg.SubscribedTopicNames = "diff-features-sg", "diff-features-member-0000", []string{"diff-features"}
	s.Do("share-version-0", 1, sg)
	s.Do("share-version-dependency-free-upgrade", 2, featureUpdates(false, 1, "share.version", 1))
	s.Do("groups-on", 2, featureUpdates(false, 1, "group.version", 1, "share.version", 2))
	if err := describe("after-groups-on", map[string]int16{"group.version": 1, "share.version": 2}); err != nil {
		return err
	}

	// streams.version 0: ApiVersions still lists keys 88, 89 and 93 (Kafka
	// 4.4 lists them whatever the level and the config) and the three
	// answer UNSUPPORTED_VERSION with no message.
	s.Do("streams-off", 1, featureUpdates(false, 3, "streams.version", 0))
	if err := describe("after-streams-off", map[string]int16{"streams.version": 0}); err != nil {
		return err
	}
	process := "diff-process-0"
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.ProcessID = "diff-features-stg", "diff-features-member-0000", 30000, &process
	hb.Topology = streamsTopology(hb.Group)
	hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	s.Do("streams-version-0", 0, hb)
	s.Do("streams-version-0", 1, hb)
	sd := kmsg.NewPtrStreamsGroupDescribeRequest()
	sd.Groups = []string{hb.Group}
	s.Do("streams-version-0", 1, sd)
	td := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	td.Group, td.MemberID = hb.Group, hb.MemberID
	s.Do("streams-version-0", 0, td)
	s.Do("streams-on", 2, featureUpdates(false, 1, "streams.version", 1))
	return describe("after-streams-on", map[string]int16{"streams.version": 1})
}

// fenceFlow makes a transaction of txnID ongoing (InitProducerId, then
// AddOffsetsToTxn), fences it with a second InitProducerId (retried while
// the coordinator answers CONCURRENT_TRANSACTIONS, Kafka's answer until its
// abort completed) and records DescribeTransactions: the producer epoch
// after the coordinator's own abort and the new producer's bump. Kafka 4.4
// answers epoch 2 at transaction.version 1 and 2 alike for such a
// transaction (started with AddOffsetsToTxn v3, a transaction version 1
// request), although its coordinator passes the finalized level to its own
// aborts; samsa's abort bumps the epoch once at every level.
func (s *Session) fenceFlow(name, txnID string) error {
	if err := s.SettleCoordinator(1, txnID); err != nil {
		return err
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 60000
	r, err := s.Quiet(4, ip)
	if err != nil {
		return err
	}
	init := r.(*kmsg.InitProducerIDResponse)
	if init.ErrorCode != 0 {
		return fmt.Errorf("%w: %s: InitProducerId %s: code %d", ErrDiffTimeout, s.Broker, txnID, init.ErrorCode)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txnID, init.ProducerID, init.ProducerEpoch, "diff-features-fence"
	if r, err = s.Quiet(3, ao); err != nil {
		return err
	}
	if code := r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		return fmt.Errorf("%w: %s: AddOffsetsToTxn %s: code %d", ErrDiffTimeout, s.Broker, txnID, code)
	}
	if err := s.Settle(60*time.Second, 4, ip, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }); err != nil {
		return err
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{txnID}
	s.Do(name, 0, dt)
	return nil
}

// settleFeatures polls ApiVersions (unrecorded) until the broker shows
// the wanted finalized levels (0: not finalized): a broker learns a
// change from the metadata log a moment after the controller answered.
func (s *Session) settleFeatures(want map[string]int16) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "diff", "1.0"
		resp, err := s.Quiet(4, req)
		if err != nil {
			return err
		}
		have := map[string]int16{}
		for _, f := range resp.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
			have[f.Name] = f.MaxVersionLevel
		}
		ok := true
		for name, level := range want {
			ok = ok && have[name] == level
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: finalized features %v, want %v", ErrDiffTimeout, s.Broker, have, want)
		}
		<-time.After(50 * time.Millisecond)
	}
}
