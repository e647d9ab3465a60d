package diff

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitScram polls (unrecorded) until user's SCRAM credentials are present
// (want true) or gone, at most 10 s: Kafka answers AlterUserScramCredentials
// once its controller committed the change, and the broker's metadata cache
// applies it a moment later, so an immediate describe races with it.
func waitScram(s *Session, user string, want bool) {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = user
		req.Users = append(req.Users, ru)
		resp, err := s.Quiet(0, req)
		if err != nil {
			return
		}
		r := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
		if len(r.Results) == 1 && (len(r.Results[0].CredentialInfos) > 0) == want {
			return
		}
	}
}

// scriptSecurity covers the SASL and SCRAM APIs on the PLAINTEXT listener
// both brokers run here: SASL requests on a listener that authenticates
// nobody, and SCRAM credential administration (stored in the metadata log
// on both), including invalid upserts.
func scriptSecurity(s *Session) error {
	each(kmsg.SASLHandshake, func(v int16) {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Mechanism = "PLAIN"
		s.Do("plaintext-listener", v, req)
	})
	each(kmsg.SASLAuthenticate, func(v int16) {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("\x00user\x00pw")
		s.Do("plaintext-listener", v, req)
	})
	describe := func(name string, users ...string) {
		each(kmsg.DescribeUserSCRAMCredentials, func(v int16) {
			req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			if users != nil {
				req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
				for _, u := range users {
					ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
					ru.Name = u
					req.Users = append(req.Users, ru)
				}
			}
			s.Do(name, v, req)
		})
	}
	describe("all-none")
	describe("unknown-user", "diff-nobody")
	upsert := func(user string, mechanism int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = user, mechanism, iterations
		u.Salt = []byte("0123456789abcdef")
		u.SaltedPassword = make([]byte, 32)
		if mechanism == 2 {
			u.SaltedPassword = make([]byte, 64)
		}
		return u
	}
	each(kmsg.AlterUserSCRAMCredentials, func(v int16) {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Upsertions = append(req.Upsertions, upsert("diff-alice", 1, 4096), upsert("diff-bob", 2, 8192))
		s.Do("upsert", v, req)

		bad := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		bad.Upsertions = append(bad.Upsertions, upsert("diff-low", 1, 1), upsert("diff-mech", 9, 4096), upsert("", 1, 4096))
		s.Do("invalid-upserts", v, bad)

		dup := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		dup.Upsertions = append(dup.Upsertions, upsert("diff-twice", 1, 4096), upsert("diff-twice", 2, 4096))
		s.Do("duplicate-user", v, dup)
	})
	waitScram(s, "diff-alice", true)
	waitScram(s, "diff-bob", true)
	describe("after-upsert", "diff-alice", "diff-bob", "diff-nobody")
	each(kmsg.AlterUserSCRAMCredentials, func(v int16) {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "diff-alice", 1
		miss := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		miss.Name, miss.Mechanism = "diff-nobody", 1
		req.Deletions = append(req.Deletions, d, miss)
		s.Do("delete", v, req)
	})
	waitScram(s, "diff-alice", false)
	describe("after-delete", "diff-alice", "diff-bob")
	scriptDelegationTokens(s)
	return nil
}

// scriptDelegationTokens sends the delegation token APIs on the PLAINTEXT
// listener, where Kafka refuses them all with
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED before anything else (the owner and
// requester are User:ANONYMOUS, timestamps -1). Tokens over SASL, and
// their other answers, are compared with Kafka by
// compat-tests/delegation_token_test.go.
func scriptDelegationTokens(s *Session) {
	each(kmsg.CreateDelegationToken, func(v int16) {
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		rn := kmsg.NewCreateDelegationTokenRequestRenewer()
		rn.PrincipalType, rn.PrincipalName = "User", "diff-bob"
		req.Renewers = append(req.Renewers, rn)
		req.MaxLifetimeMillis = -1
		s.Do("plaintext-listener", v, req)
		if v >= 3 {
			other := kmsg.NewPtrCreateDelegationTokenRequest()
			other.OwnerPrincipalType, other.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr("diff-alice")
			other.MaxLifetimeMillis = 60000
			s.Do("plaintext-listener-owner", v, other)
		}
	})
	each(kmsg.RenewDelegationToken, func(v int16) {
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = []byte("no-such-hmac"), 60000
		s.Do("plaintext-listener", v, req)
	})
	each(kmsg.ExpireDelegationToken, func(v int16) {
		req := kmsg.NewPtrExpireDelegationTokenRequest()
		req.HMAC, req.ExpiryPeriodMillis = []byte("no-such-hmac"), -1
		s.Do("plaintext-listener", v, req)
	})
	each(kmsg.DescribeDelegationToken, func(v int16) {
		s.Do("plaintext-listener-all", v, kmsg.NewPtrDescribeDelegationTokenRequest())
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		o := kmsg.NewDescribeDelegationTokenRequestOwner()
		o.PrincipalType, o.PrincipalName = "User", "diff-alice"
		req.Owners = append(req.Owners, o)
		s.Do("plaintext-listener-owner", v, req)
	})
}
