package handlers

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

// DescribeDelegationToken, key 41, versions 1-3 (flexible from 2).
//
// Answered from this node's metadata image, as Kafka 4.4's KafkaApis:
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that may not ask
// for tokens (tokenRequestsAllowed), DELEGATION_TOKEN_AUTH_DISABLED
// without delegation.token.secret.key, no tokens for an empty (not null)
// owners list. Otherwise every token (null owners) or those whose owner,
// requester or a renewer is one of the owners, keeping those the requester
// owns, requested or may renew, those it may DESCRIBE as DELEGATION_TOKEN
// resources (by token id), and those of owners it has DESCRIBE_TOKENS on
// (USER resource "User:alice"). Tokens past their expiry are listed until the active
// controller's sweep removes them, as in Kafka. Each token comes with its
// HMAC under this node's secret. Tokens are sorted by issue time and id
// (Kafka's order is its hash map's).
func handleDescribeDelegationToken(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	switch {
	case !tokenRequestsAllowed(r):
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case !d.Config.DelegationTokens.Enabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case req.Owners != nil && len(req.Owners) == 0:
		return resp, nil
	}
	var owners []string
	for _, o := range req.Owners {
		owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
	}
	var tokens []controller.DelegationToken
	for _, t := range d.Controller.Image().DelegationTokens {
		if describableToken(d, r, t, req.Owners != nil, owners) {
			tokens = append(tokens, t)
		}
	}
	slices.SortFunc(tokens, func(a, b controller.DelegationToken) int {
		return cmp.Or(cmp.Compare(a.IssueTimestamp, b.IssueTimestamp), cmp.Compare(a.TokenID, b.TokenID))
	})
	secret := d.Config.DelegationTokens.SecretKey
	for _, t := range tokens {
		td := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		td.PrincipalType, td.PrincipalName = splitPrincipal(t.Owner)
		td.TokenRequesterPrincipalType, td.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
		td.IssueTimestamp, td.ExpiryTimestamp, td.MaxTimestamp = t.IssueTimestamp, t.ExpiryTimestamp, t.MaxTimestamp
		td.TokenID, td.HMAC = t.TokenID, controller.DelegationTokenHMAC(secret, t.TokenID)
		for _, rn := range t.Renewers {
			dr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			dr.PrincipalType, dr.PrincipalName = splitPrincipal(rn)
			td.Renewers = append(td.Renewers, dr)
		}
		resp.TokenDetails = append(resp.TokenDetails, td)
	}
	return resp, nil
}

// describableToken is Kafka's DelegationTokenManager.filterToken: t is
// among the owners asked for (when filtered), and the requester owns,
// requested or may renew it, may DESCRIBE the token, or may
// DESCRIBE_TOKENS of its owner.
func describableToken(d *Deps, r *Request, t controller.DelegationToken, filtered bool, owners []string) bool {
	if filtered && !slices.ContainsFunc(owners, t.OwnerOrRenewer) {
		return false
	}
	return t.OwnerOrRenewer(r.Principal) ||
		d.authorized(r, kmsg.ACLOperationDescribe, acl.Resource{Type: kmsg.ACLResourceTypeDelegationToken, Name: t.TokenID}) ||
		d.authorized(r, kmsg.ACLOperationDescribeTokens, acl.Resource{Type: kmsg.ACLResourceTypeUser, Name: t.Owner})
}
