package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RenewDelegationToken, key 39, versions 1-2 (flexible from 2).
//
// As Kafka 4.4: the receiving node refuses a connection that may not ask
// for tokens (tokenRequestsAllowed) with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
// and expiry -1, else forwards the request to the active controller, which
// answers DELEGATION_TOKEN_AUTH_DISABLED without
// delegation.token.secret.key, DELEGATION_TOKEN_NOT_FOUND for an HMAC of
// no token, DELEGATION_TOKEN_EXPIRED for a token past its expiry,
// DELEGATION_TOKEN_OWNER_MISMATCH when the principal is neither its owner
// nor a renewer, and otherwise moves its expiry to now plus the shorter
// of renew_period_ms (when positive) and delegation.token.expiry.time.ms,
// never past its max timestamp, and answers the new expiry.
func handleRenewDelegationToken(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.RenewDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	if !tokenRequestsAllowed(r) {
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		return resp, nil
	}
	resp.ExpiryTimestamp, resp.ErrorCode, _ = d.Controller.RenewDelegationToken(tokenSettings(d), d.Now(), r.Principal, req.HMAC, req.RenewTimeMillis)
	return resp, nil
}

// tokenRequestRefused reports whether the receiving node answers a
// token request itself rather than forwarding it (Entry.AnswerLocally).
func tokenRequestRefused(_ *Deps, r *Request) bool { return !tokenRequestsAllowed(r) }
