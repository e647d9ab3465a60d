package controller

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDelegationTokenHMAC: the HMAC is HmacSHA512(key=secret, tokenID),
// as Kafka's DelegationTokenManager.createHmac (RFC 4231 test case 2:
// key "Jefe", data "what do ya want for nothing?").
func TestDelegationTokenHMAC(t *testing.T) {
	got := hex.EncodeToString(DelegationTokenHMAC("Jefe", "what do ya want for nothing?"))
	want := "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
	if got != want {
		t.Fatalf("HMAC %s, want %s", got, want)
	}
}

// TestDelegationTokenLifecycle follows Kafka's DelegationTokenControlManager
// through create, renew, expire and the expiry sweep, with its error codes.
func TestDelegationTokenLifecycle(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	s := DelegationTokenSettings{SecretKey: "secret", MaxLifetimeMs: 7 * 86400000, ExpiryTimeMs: 86400000}
	now := time.UnixMilli(1_000_000)

	if _, _, code, _ := c.CreateDelegationToken(DelegationTokenSettings{}, now, CreateDelegationToken{Owner: "User:a", Requester: "User:a"}); code != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("disabled: code %d", code)
	}
	if _, _, code, _ := c.CreateDelegationToken(s, now, CreateDelegationToken{Owner: "User:a", Requester: "User:a", Renewers: []string{"Group:g"}}); code != kerr.InvalidPrincipalType.Code {
		t.Fatalf("group renewer: code %d", code)
	}
	tok, mac, code, _ := c.CreateDelegationToken(s, now, CreateDelegationToken{Owner: "User:alice", Requester: "User:admin", Renewers: []string{"User:bob"}})
	if code != 0 {
		t.Fatalf("create: code %d", code)
	}
	want := DelegationToken{TokenID: tok.TokenID, Owner: "User:alice", Requester: "User:admin", Renewers: []string{"User:bob"},
		IssueTimestamp: 1_000_000, MaxTimestamp: 1_000_000 + 7*86400000, ExpiryTimestamp: 1_000_000 + 86400000}
	if !reflect.DeepEqual(tok, want) || len(tok.TokenID) != 22 {
		t.Fatalf("token %+v, want %+v", tok, want)
	}
	if !bytes.Equal(mac, DelegationTokenHMAC("secret", tok.TokenID)) {
		t.Fatal("HMAC is not HmacSHA512 of the token id")
	}
	if got := c.Image().DelegationTokens[tok.TokenID]; !reflect.DeepEqual(got, want) {
		t.Fatalf("image %+v", got)
	}
	// A shorter max lifetime of the request caps both timestamps.
	short, shortMac, _, _ := c.CreateDelegationToken(s, now, CreateDelegationToken{Owner: "User:alice", Requester: "User:alice", MaxLifetimeMs: 1000})
	if short.MaxTimestamp != 1_001_000 || short.ExpiryTimestamp != 1_001_000 {
		t.Fatalf("short token %+v", short)
	}

	later := now.Add(time.Hour)
	if _, code, _ := c.RenewDelegationToken(s, later, "User:alice", []byte("nope"), -1); code != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew unknown: %d", code)
	}
	if _, code, _ := c.RenewDelegationToken(s, later, "User:carol", mac, -1); code != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("renew by stranger: %d", code)
	}
	// The requester describes the token (Kafka's ownerOrRenewer counts
	// it) but may not renew it (allowedToRenew does not).
	if _, code, _ := c.RenewDelegationToken(s, later, "User:admin", mac, -1); code != kerr.DelegationTokenOwnerMismatch.Code || !tok.OwnerOrRenewer("User:admin") {
		t.Fatalf("renew by the requester: %d", code)
	}
	if _, code, _ := c.RenewDelegationToken(s, later, "User:alice", shortMac, -1); code != kerr.DelegationTokenExpired.Code {
		t.Fatalf("renew expired: %d", code)
	}
	// The renewer renews: expiry from now, for the shorter of the asked
	// period and delegation.token.expiry.time.ms.
	exp, code, _ := c.RenewDelegationToken(s, later, "User:bob", mac, 5000)
	if code != 0 || exp != later.UnixMilli()+5000 {
		t.Fatalf("renew: %d %d", exp, code)
	}
	if exp, _, _ := c.RenewDelegationToken(s, later, "User:alice", mac, 30*86400000); exp != later.UnixMilli()+86400000 {
		t.Fatalf("renew with a long period: %d", exp)
	}
	if got := c.Image().DelegationTokens[tok.TokenID].ExpiryTimestamp; got != later.UnixMilli()+86400000 {
		t.Fatalf("image expiry %d", got)
	}
	// Renewals never pass the maximum lifetime (a token whose expiry
	// time is longer than its lifetime).
	s10 := s
	s10.ExpiryTimeMs = 10 * 86400000
	long, longMac, _, _ := c.CreateDelegationToken(s10, now, CreateDelegationToken{Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"}})
	if long.ExpiryTimestamp != long.MaxTimestamp {
		t.Fatalf("long token %+v", long)
	}
	nearEnd := time.UnixMilli(long.MaxTimestamp - 10)
	if exp, code, _ := c.RenewDelegationToken(s10, nearEnd, "User:alice", longMac, -1); code != 0 || exp != long.MaxTimestamp {
		t.Fatalf("renew near the end: %d %d, want max %d", exp, code, long.MaxTimestamp)
	}
	if exp, code, _ := c.ExpireDelegationToken(s, nearEnd, "User:bob", longMac, 3_600_000); code != 0 || exp != long.MaxTimestamp {
		t.Fatalf("expire past max: %d %d", exp, code)
	}
	if _, code, _ := c.ExpireDelegationToken(s, nearEnd, "User:carol", longMac, 0); code != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("expire by stranger: %d", code)
	}
	// An expired token cannot get a new expiry but can be removed.
	if _, code, _ := c.ExpireDelegationToken(s, later, "User:alice", shortMac, 10); code != kerr.DelegationTokenExpired.Code {
		t.Fatalf("expire expired: %d", code)
	}
	if exp, code, _ := c.ExpireDelegationToken(s, later, "User:alice", shortMac, -1); code != 0 || exp != later.UnixMilli() {
		t.Fatalf("expire now: %d %d", exp, code)
	}
	if _, ok := c.Image().DelegationTokens[short.TokenID]; ok {
		t.Fatal("token expired with a negative period is still in the image")
	}

	// The sweep removes what is past its expiry, nothing else: at the
	// end of long's lifetime, tok (expired a day after its renewal) and
	// long go; other stays.
	other, _, _, _ := c.CreateDelegationToken(s, nearEnd, CreateDelegationToken{Owner: "User:dave", Requester: "User:dave"})
	removed, err := c.SweepExpiredDelegationTokens(time.UnixMilli(long.MaxTimestamp + 1))
	if err != nil || len(removed) != 2 {
		t.Fatalf("sweep: %+v %v", removed, err)
	}
	img := c.Image()
	if _, ok := img.DelegationTokens[other.TokenID]; !ok || len(img.DelegationTokens) != 1 {
		t.Fatalf("after sweep: %+v", img.DelegationTokens)
	}
	if removed, err := c.SweepExpiredDelegationTokens(time.UnixMilli(long.MaxTimestamp + 1)); err != nil || len(removed) != 0 {
		t.Fatalf("second sweep: %+v %v", removed, err)
	}

	// Snapshots carry tokens.
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSnapshot(&buf, EmptyImage(img.ClusterID, img.ControllerID))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.DelegationTokens, img.DelegationTokens) {
		t.Fatalf("snapshot: %+v, want %+v", back.DelegationTokens, img.DelegationTokens)
	}
}

// TestDelegationTokenRecordRejects: a removal of an unknown token and a
// token without an owner do not apply.
func TestDelegationTokenRecordRejects(t *testing.T) {
	img := EmptyImage("c", 1)
	if _, err := Apply(img, DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: "x"}, Remove: true}); err == nil {
		t.Fatal("removal of an unknown token applied")
	}
	if _, err := Apply(img, DelegationTokenRecord{DelegationToken: DelegationToken{TokenID: "x"}}); err == nil {
		t.Fatal("token without owner applied")
	}
	if _, err := Apply(img, DelegationTokenRecord{}); err == nil {
		t.Fatal("token without id applied")
	}
}
