package diff

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptFeatures covers UpdateFeatures with the updates both brokers answer
// alike although samsa's feature levels are fixed: an unknown feature (the
// first step of Sarama's TestFuncAdminUpdateFeatures), a known one at the
// level it has (validate-only and not: Kafka writes a record that changes
// nothing), a downgrade without a downgrade type, a level below 0 or above the
// supported range and an unknown upgrade type. A change of level (which Kafka
// makes and samsa refuses) is not sent: it would change Kafka's state.
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
	return nil
}
