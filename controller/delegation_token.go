package controller

import (
	"crypto/hmac"
	"crypto/sha512"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Delegation tokens (KIP-48) in the metadata log, as Kafka's
// DelegationTokenRecord / RemoveDelegationTokenRecord: per token its id,
// owner, requester, renewers and timestamps; never its HMAC, which every
// node derives from the token id and delegation.token.secret.key
// (DelegationTokenHMAC), so that the secret never enters the log.
//
// The decisions follow Kafka 4.4's DelegationTokenControlManager:
// CreateDelegationToken, RenewDelegationToken and ExpireDelegationToken on
// the active controller, and the periodic removal of expired tokens
// (SweepExpiredDelegationTokens, every
// delegation.token.expiry.check.interval.ms).

// RecordDelegationToken is the type of DelegationTokenRecord.
const RecordDelegationToken RecordType = 30

// DelegationToken is a token's information (Kafka's TokenInformation).
// Principals are "Type:name" ("User:alice"); timestamps are Unix
// milliseconds.
type DelegationToken struct {
	TokenID   string   `json:"token_id"`
	Owner     string   `json:"owner"`
	Requester string   `json:"requester"`
	Renewers  []string `json:"renewers,omitempty"`
	// IssueTimestamp is when the token was created; MaxTimestamp the end
	// of its lifetime, which no renewal passes; ExpiryTimestamp the end
	// of its current validity, moved by renewals.
	IssueTimestamp  int64 `json:"issue_timestamp"`
	MaxTimestamp    int64 `json:"max_timestamp"`
	ExpiryTimestamp int64 `json:"expiry_timestamp"`
}

// Expired reports whether the token is past its expiry or its maximum
// lifetime at nowMs, as Kafka compares (strictly after).
func (t DelegationToken) Expired(nowMs int64) bool {
	return t.MaxTimestamp < nowMs || t.ExpiryTimestamp < nowMs
}

// OwnerOrRenewer reports whether principal owns the token, requested
// it or may renew it: Kafka 4.4's TokenInformation.ownerOrRenewer, which
// counts the requester too (checked against Kafka 4.4 by
// compat-tests/delegation_token_test.go: a token created for carol by
// alice is described to alice). DescribeDelegationToken filters with it.
func (t DelegationToken) OwnerOrRenewer(principal string) bool {
	return t.Owner == principal || t.Requester == principal || slices.Contains(t.Renewers, principal)
}

// mayRenew reports whether principal may renew or expire the token: its
// owner or a renewer, not its requester (Kafka's
// DelegationTokenControlManager.allowedToRenew).
func (t DelegationToken) mayRenew(principal string) bool {
	return t.Owner == principal || slices.Contains(t.Renewers, principal)
}

// DelegationTokenRecord sets a token (Remove false: created or its expiry
// changed) or removes it (Remove true; only TokenID counts).
type DelegationTokenRecord struct {
	DelegationToken
	Remove bool `json:"remove,omitempty"`
}

func (DelegationTokenRecord) recordType() RecordType { return RecordDelegationToken }

// applyDelegationToken applies r to the builder's image. The map is
// copied whole: tokens change rarely.
func (b *builder) applyDelegationToken(r DelegationTokenRecord) error {
	if r.TokenID == "" {
		return fmt.Errorf("%w: delegation token without an id", ErrApply)
	}
	next := make(map[string]DelegationToken, len(b.img.DelegationTokens)+1)
	maps.Copy(next, b.img.DelegationTokens)
	if r.Remove {
		if _, ok := next[r.TokenID]; !ok {
			return fmt.Errorf("%w: removal of unknown delegation token %q", ErrApply, r.TokenID)
		}
		delete(next, r.TokenID)
	} else {
		if r.Owner == "" || r.Requester == "" {
			return fmt.Errorf("%w: delegation token %q without owner or requester", ErrApply, r.TokenID)
		}
		t := r.DelegationToken
		t.Renewers = slices.Clone(t.Renewers)
		next[r.TokenID] = t
	}
	b.img.DelegationTokens = next
	return nil
}

// delegationTokenRecords returns the records that rebuild img's tokens,
// by id, for snapshots.
func delegationTokenRecords(recs []Record, img *Image) []Record {
	for _, id := range slices.Sorted(maps.Keys(img.DelegationTokens)) {
		recs = append(recs, DelegationTokenRecord{DelegationToken: img.DelegationTokens[id]})
	}
	return recs
}

// DelegationTokenHMAC is a token's HMAC: HmacSHA512 of the token id keyed
// with delegation.token.secret.key (both as UTF-8), as Kafka computes it.
// Its base64 form is the token's SCRAM password.
func DelegationTokenHMAC(secret, tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// DelegationTokenSettings are the delegation.token.* settings the active
// controller decides with. An empty SecretKey disables tokens.
type DelegationTokenSettings struct {
	SecretKey     string
	MaxLifetimeMs int64 // delegation.token.max.lifetime.ms
	ExpiryTimeMs  int64 // delegation.token.expiry.time.ms
}

// tokenForHMAC finds the token whose HMAC under secret is mac.
func tokenForHMAC(img *Image, secret string, mac []byte) (DelegationToken, bool) {
	for _, t := range img.DelegationTokens {
		if hmac.Equal(DelegationTokenHMAC(secret, t.TokenID), mac) {
			return t, true
		}
	}
	return DelegationToken{}, false
}

// saturatingAdd is a+b, or math.MaxInt64 when that overflows (Kafka's sum).
func saturatingAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// CreateDelegationToken is a request for a token. The broker has already
// checked that the connection may ask for tokens and that Requester may
// create them for Owner (CREATE_TOKENS on the owner's USER resource).
type CreateDelegationToken struct {
	Owner     string
	Requester string
	// Renewers are principals allowed to renew (and expire) the token
	// besides its owner; all must be of type User.
	Renewers []string
	// MaxLifetimeMs shortens delegation.token.max.lifetime.ms when
	// positive.
	MaxLifetimeMs int64
}

// CreateDelegationToken creates a token, as Kafka's
// DelegationTokenControlManager.createDelegationToken: disabled tokens are
// DELEGATION_TOKEN_AUTH_DISABLED, a renewer of another principal type than
// User INVALID_PRINCIPAL_TYPE. On success it returns the token and its
// HMAC.
func (c *Controller) CreateDelegationToken(s DelegationTokenSettings, now time.Time, req CreateDelegationToken) (DelegationToken, []byte, int16, string) {
	if s.SecretKey == "" {
		return DelegationToken{}, nil, kerr.DelegationTokenAuthDisabled.Code, ""
	}
	for _, r := range req.Renewers {
		if principalType(r) != "User" {
			return DelegationToken{}, nil, kerr.InvalidPrincipalType.Code, ""
		}
	}
	nowMs := now.UnixMilli()
	lifetime := s.MaxLifetimeMs
	if req.MaxLifetimeMs > 0 {
		lifetime = min(lifetime, req.MaxLifetimeMs)
	}
	maxTs := saturatingAdd(nowMs, lifetime)
	t := DelegationToken{
		TokenID:         NewUuid(c.opts.Rand).String(),
		Owner:           req.Owner,
		Requester:       req.Requester,
		Renewers:        slices.Clone(req.Renewers),
		IssueTimestamp:  nowMs,
		MaxTimestamp:    maxTs,
		ExpiryTimestamp: min(maxTs, saturatingAdd(nowMs, s.ExpiryTimeMs)),
	}
	err := c.write(false, func(*Image) []Record {
		return []Record{DelegationTokenRecord{DelegationToken: t}}
	})
	if err != nil {
		code, msg := errorCode(err)
		return DelegationToken{}, nil, code, msg
	}
	return t, DelegationTokenHMAC(s.SecretKey, t.TokenID), 0, ""
}

// principalType is the type of a "Type:name" principal.
func principalType(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] == ':' {
			return p[:i]
		}
	}
	return ""
}

// RenewDelegationToken moves the expiry of the token whose HMAC is mac to
// now plus periodMs (delegation.token.expiry.time.ms when periodMs is not
// positive or larger), never past its maximum lifetime, as Kafka's
// renewDelegationToken: an unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, an
// expired token DELEGATION_TOKEN_EXPIRED, a principal that is neither
// owner nor renewer DELEGATION_TOKEN_OWNER_MISMATCH. It returns the new
// expiry timestamp.
func (c *Controller) RenewDelegationToken(s DelegationTokenSettings, now time.Time, principal string, mac []byte, periodMs int64) (int64, int16, string) {
	return c.changeDelegationToken(s, now, mac, func(t DelegationToken, nowMs int64) ([]Record, int64, int16) {
		switch {
		case t.Expired(nowMs):
			return nil, 0, kerr.DelegationTokenExpired.Code
		case !t.mayRenew(principal):
			return nil, 0, kerr.DelegationTokenOwnerMismatch.Code
		}
		period := s.ExpiryTimeMs
		if periodMs > 0 {
			period = min(period, periodMs)
		}
		t.ExpiryTimestamp = min(t.MaxTimestamp, saturatingAdd(nowMs, period))
		return []Record{DelegationTokenRecord{DelegationToken: t}}, t.ExpiryTimestamp, 0
	})
}

// ExpireDelegationToken sets the expiry of the token whose HMAC is mac to
// now plus periodMs (never past its maximum lifetime), or removes it at
// once when periodMs is negative, as Kafka's expireDelegationToken: an
// unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, a principal that is neither
// owner nor renewer DELEGATION_TOKEN_OWNER_MISMATCH, and an expired token
// DELEGATION_TOKEN_EXPIRED unless it is removed. It returns the new
// expiry timestamp (now for a removal).
func (c *Controller) ExpireDelegationToken(s DelegationTokenSettings, now time.Time, principal string, mac []byte, periodMs int64) (int64, int16, string) {
	return c.changeDelegationToken(s, now, mac, func(t DelegationToken, nowMs int64) ([]Record, int64, int16) {
		switch {
		case !t.mayRenew(principal):
			return nil, 0, kerr.DelegationTokenOwnerMismatch.Code
		case periodMs < 0:
			return []Record{DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: t.TokenID}, Remove: true}}, nowMs, 0
		case t.Expired(nowMs):
			return nil, 0, kerr.DelegationTokenExpired.Code
		}
		t.ExpiryTimestamp = min(t.MaxTimestamp, saturatingAdd(nowMs, periodMs))
		return []Record{DelegationTokenRecord{DelegationToken: t}}, t.ExpiryTimestamp, 0
	})
}

// changeDelegationToken is the write Renew and Expire share: with tokens
// enabled, it finds the token whose HMAC is mac in the latest metadata
// (DELEGATION_TOKEN_NOT_FOUND when none) and writes the records change
// decides on, returning the expiry it reports, or its error code.
func (c *Controller) changeDelegationToken(s DelegationTokenSettings, now time.Time, mac []byte,
	change func(t DelegationToken, nowMs int64) (recs []Record, expiry int64, code int16)) (int64, int16, string) {
	if s.SecretKey == "" {
		return 0, kerr.DelegationTokenAuthDisabled.Code, ""
	}
	nowMs := now.UnixMilli()
	var (
		expiry int64
		code   int16
	)
	err := c.write(false, func(img *Image) []Record {
		t, ok := tokenForHMAC(img, s.SecretKey, mac)
		if !ok {
			code = kerr.DelegationTokenNotFound.Code
			return nil
		}
		var recs []Record
		recs, expiry, code = change(t, nowMs)
		return recs
	})
	if err != nil && overrides(code, err) {
		code, msg := errorCode(err)
		return 0, code, msg
	}
	if code != 0 {
		return 0, code, ""
	}
	return expiry, 0, ""
}

// maxTokenRemovalsPerBatch bounds the removals of one sweep batch, as
// Kafka's MAX_RECORDS_PER_EXPIRATION.
const maxTokenRemovalsPerBatch = 1000

// SweepExpiredDelegationTokens removes the tokens expired at now (past
// their expiry or maximum lifetime), at most maxTokenRemovalsPerBatch per
// metadata batch, and returns them. The active controller runs it every
// delegation.token.expiry.check.interval.ms; elsewhere it returns
// ErrNotController.
func (c *Controller) SweepExpiredDelegationTokens(now time.Time) ([]DelegationToken, error) {
	nowMs := now.UnixMilli()
	var removed []DelegationToken
	for {
		var batch []DelegationToken
		err := c.write(false, func(img *Image) []Record {
			batch = batch[:0]
			var recs []Record
			for _, id := range slices.Sorted(maps.Keys(img.DelegationTokens)) {
				t := img.DelegationTokens[id]
				if !t.Expired(nowMs) {
					continue
				}
				batch = append(batch, t)
				recs = append(recs, DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: id}, Remove: true})
				if len(recs) == maxTokenRemovalsPerBatch {
					break
				}
			}
			return recs
		})
		if err != nil {
			return removed, err
		}
		removed = append(removed, batch...)
		if len(batch) < maxTokenRemovalsPerBatch {
			return removed, nil
		}
	}
}
