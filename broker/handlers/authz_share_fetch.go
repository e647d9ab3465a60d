package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authzShareFetchCheck returns the checks of ShareFetch and
// ShareAcknowledge: READ on the group (GROUP_AUTHORIZATION_FAILED for the
// whole request); READ on each topic is checked per partition by the
// handlers (TOPIC_AUTHORIZATION_FAILED), as Kafka's KafkaApis.
func authzShareFetchCheck(key int16) authzFunc {
	switch kmsg.Key(key) {
	case kmsg.ShareFetch:
		return func(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
			req := r.Body.(*kmsg.ShareFetchRequest)
			if !d.authorizedGroup(r, kmsg.ACLOperationRead, shareString(req.GroupID)) {
				resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
				resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				return resp, nil
			}
			return next(d, r)
		}
	case kmsg.ShareAcknowledge:
		return func(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
			req := r.Body.(*kmsg.ShareAcknowledgeRequest)
			if !d.authorizedGroup(r, kmsg.ACLOperationRead, shareString(req.GroupID)) {
				resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
				resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
				return resp, nil
			}
			return next(d, r)
		}
	}
	return nil
}
