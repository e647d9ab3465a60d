package handlers

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
)

// shareTopicCreateTimeout bounds the background creation of
// __share_group_state that a FindCoordinator SHARE starts.
const shareTopicCreateTimeout = 30 * time.Second

// shareCoordinatorKey checks a FindCoordinator key of type 2 (SHARE) as
// Kafka 4.4 does: only from v6, and it must parse as
// "group:topicId:partition" (else INVALID_REQUEST in rc). It returns the
// string whose hash picks the __share_group_state partition, and starts
// creating that topic when it does not exist yet, as Kafka creates it on
// the first lookup (the answer meanwhile is COORDINATOR_NOT_AVAILABLE).
func shareCoordinatorKey(d *Deps, version int16, key string, img *controller.Image, rc *kmsg.FindCoordinatorResponseCoordinator) string {
	if version < 6 {
		rc.ErrorCode = kerr.InvalidRequest.Code
		return key
	}
	k, err := sharecoord.ParseCoordinatorKey(key)
	if err != nil {
		// Kafka 4.4 answers a malformed key with an empty message.
		empty := ""
		rc.ErrorCode, rc.ErrorMessage = kerr.InvalidRequest.Code, &empty
		return key
	}
	if d.ShareCoordinator == nil {
		rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
	}
	if img.Topics[share.StateTopic] == nil {
		if c, ok := d.SharePersister.(sharecoord.TopicCreator); ok {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), shareTopicCreateTimeout)
				defer cancel()
				if err := c.CreateStateTopic(ctx); err != nil && d.Logger != nil {
					d.Logger.Warn("cannot create the share state topic yet", "topic", share.StateTopic, "err", err)
				}
			}()
		}
	}
	return sharecoord.CoordinatorKey(k)
}
