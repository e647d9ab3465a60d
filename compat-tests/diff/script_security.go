package diff

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	describe("after-delete", "diff-alice", "diff-bob")
	return nil
}
