package handlers

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// CreateDelegationToken, key 38, versions 1-3 (flexible from 2).
//
// KIP-48 delegation tokens, as Kafka 4.4's KafkaApis and
// DelegationTokenControlManager. The node that receives the request
// checks, in this order, before it forwards it to the active controller
// (AnswerLocally):
//
//   - the connection may ask for tokens (tokenRequestsAllowed): not
//     PLAINTEXT, not SSL without a client certificate, and not itself
//     authenticated with a token; else DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
//   - v3's owner (OwnerPrincipalType/Name; null or empty name: the
//     requester) differs from the requester: CREATE_TOKENS on the owner's
//     USER resource ("User:alice"), else
//     DELEGATION_TOKEN_AUTHORIZATION_FAILED;
//   - every renewer is of type User, else INVALID_PRINCIPAL_TYPE.
//
// Before all that, an owner name with a null type is UNKNOWN_SERVER_ERROR
// with User:ANONYMOUS as owner and requester (Kafka 4.4 fails on a null
// principal type and answers its generic error response).
//
// These refusals carry -1 timestamps, as Kafka's prepareResponse. The
// controller then answers DELEGATION_TOKEN_AUTH_DISABLED without
// delegation.token.secret.key, else creates the token (a 22-character
// random id, issue time now, max timestamp now + the shorter of
// max_lifetime_ms when positive and delegation.token.max.lifetime.ms,
// expiry now + delegation.token.expiry.time.ms, never past the max) and
// answers its id and HMAC. Every answer names the owner and (v3) the
// requester.
func handleCreateDelegationToken(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	owner := createTokenOwner(r, req)
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(r.Principal)
	if code := createTokenRefusal(d, r); code != 0 {
		resp.ErrorCode = code
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
		if ownerWithoutType(req) {
			// Kafka 4.4 fails building the owner (NullPointerException
			// "Principal type cannot be null") and answers its generic
			// error response, with ANONYMOUS as owner and requester.
			resp.PrincipalType, resp.PrincipalName = splitPrincipal(anonymousPrincipal)
			resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = resp.PrincipalType, resp.PrincipalName
		}
		return resp, nil
	}
	renewers := make([]string, 0, len(req.Renewers))
	for _, rn := range req.Renewers {
		renewers = append(renewers, rn.PrincipalType+":"+rn.PrincipalName)
	}
	tok, mac, code, _ := d.Controller.CreateDelegationToken(tokenSettings(d), d.Now(), controller.CreateDelegationToken{
		Owner: owner, Requester: r.Principal, Renewers: renewers, MaxLifetimeMs: req.MaxLifetimeMillis,
	})
	resp.ErrorCode = code
	if code != 0 {
		return resp, nil
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = tok.IssueTimestamp, tok.ExpiryTimestamp, tok.MaxTimestamp
	resp.TokenID, resp.HMAC = tok.TokenID, mac
	return resp, nil
}

// createTokenOwner is the owner a CreateDelegationToken asks for: v3's
// owner when its name is set, else the requester.
func createTokenOwner(r *Request, req *kmsg.CreateDelegationTokenRequest) string {
	if req.OwnerPrincipalName == nil || *req.OwnerPrincipalName == "" {
		return r.Principal
	}
	typ := ""
	if req.OwnerPrincipalType != nil {
		typ = *req.OwnerPrincipalType
	}
	return typ + ":" + *req.OwnerPrincipalName
}

// ownerWithoutType reports whether a v3 request names an owner without
// a principal type (null).
func ownerWithoutType(req *kmsg.CreateDelegationTokenRequest) bool {
	return req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" && req.OwnerPrincipalType == nil
}

// createTokenRefusal is the error Kafka's broker answers a
// CreateDelegationToken with before forwarding it, 0 for none.
func createTokenRefusal(d *Deps, r *Request) int16 {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	owner := createTokenOwner(r, req)
	switch {
	case ownerWithoutType(req):
		return kerr.UnknownServerError.Code
	case !tokenRequestsAllowed(r):
		return kerr.DelegationTokenRequestNotAllowed.Code
	case owner != r.Principal && !d.authorized(r, kmsg.ACLOperationCreateTokens, acl.Resource{Type: kmsg.ACLResourceTypeUser, Name: owner}):
		return kerr.DelegationTokenAuthorizationFailed.Code
	}
	for _, rn := range req.Renewers {
		if rn.PrincipalType != "User" {
			return kerr.InvalidPrincipalType.Code
		}
	}
	return 0
}

// createTokenRefused reports whether the receiving node refuses r itself
// (Entry.AnswerLocally).
func createTokenRefused(d *Deps, r *Request) bool { return createTokenRefusal(d, r) != 0 }

// tokenRequestsAllowed is Kafka's KafkaApis.allowTokenRequests: tokens
// are created, renewed, expired and described only over connections
// authenticated by SASL or by a TLS client certificate, and not by a
// connection authenticated with a token itself. A request another node
// forwarded was checked there.
func tokenRequestsAllowed(r *Request) bool {
	if r.Forwarded {
		return true
	}
	switch {
	case r.TokenAuthenticated:
		return false
	case r.SecurityProtocol == "SASL_PLAINTEXT" || r.SecurityProtocol == "SASL_SSL":
		return true
	case r.SecurityProtocol == "SSL":
		return r.Principal != anonymousPrincipal
	}
	return false
}

// anonymousPrincipal is the principal of an unauthenticated connection.
const anonymousPrincipal = "User:ANONYMOUS"

// tokenSettings are the delegation.token.* settings for the controller.
func tokenSettings(d *Deps) controller.DelegationTokenSettings {
	t := d.Config.DelegationTokens
	return controller.DelegationTokenSettings{SecretKey: t.SecretKey, MaxLifetimeMs: t.MaxLifetimeMs, ExpiryTimeMs: t.ExpiryTimeMs}
}

// splitPrincipal splits "Type:name" at its first colon.
func splitPrincipal(p string) (typ, name string) {
	typ, name, _ = strings.Cut(p, ":")
	return typ, name
}
