package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ExpireDelegationToken, key 40, versions 1-2 (flexible from 2).
//
// As Kafka 4.4: the receiving node refuses a connection that may not ask
// for tokens (tokenRequestsAllowed) with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
// and expiry -1, else forwards the request to the active controller, which
// answers DELEGATION_TOKEN_AUTH_DISABLED without
// delegation.token.secret.key, DELEGATION_TOKEN_NOT_FOUND for an HMAC of
// no token, DELEGATION_TOKEN_OWNER_MISMATCH when the principal is neither
// its owner nor a renewer; a negative expiry_time_period_ms removes the
// token at once (expiry: now), even an expired one; otherwise an expired
// token is DELEGATION_TOKEN_EXPIRED, and a valid one gets the expiry now
// plus the period, never past its max timestamp (kafka-delegation-tokens
// --expire-time-period 0 makes it expire at once, and the controller's
// next sweep removes it).
func handleExpireDelegationToken(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ExpireDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	if !tokenRequestsAllowed(r) {
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		return resp, nil
	}
	resp.ExpiryTimestamp, resp.ErrorCode, _ = d.Controller.ExpireDelegationToken(tokenSettings(d), d.Now(), r.Principal, req.HMAC, req.ExpiryPeriodMillis)
	return resp, nil
}
