package controller

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SCRAM credentials in the metadata log, as Kafka's
// UserScramCredentialRecord / RemoveUserScramCredentialRecord: per user and
// mechanism the salt, the stored and server keys (RFC 5802) and the
// iteration count; never the password nor the salted password.

// RecordScramCredential is the type of ScramCredentialRecord.
const RecordScramCredential RecordType = 9

// SCRAM mechanisms, with Kafka's numbering (ScramMechanism.type()).
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// Kafka's iteration limits (ScramMechanism.minIterations/maxIterations).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismName returns SCRAM-SHA-256 or SCRAM-SHA-512 for a
// mechanism number, or "".
func ScramMechanismName(m int8) string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// ScramMechanismByName is the inverse of ScramMechanismName (0: unknown).
func ScramMechanismByName(name string) int8 {
	switch name {
	case "SCRAM-SHA-256":
		return ScramSHA256
	case "SCRAM-SHA-512":
		return ScramSHA512
	}
	return 0
}

// ScramCredential is what the broker needs to check a SCRAM login.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// ScramCredentialRecord sets (Remove false) or removes the credential of
// one user for one mechanism.
type ScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
	Remove    bool   `json:"remove,omitempty"`
	ScramCredential
}

func (ScramCredentialRecord) recordType() RecordType { return RecordScramCredential }

// applyScram applies r to the builder's image.
func (b *builder) applyScram(r ScramCredentialRecord) error {
	if r.Name == "" || ScramMechanismName(r.Mechanism) == "" {
		return fmt.Errorf("%w: SCRAM credential of user %q mechanism %d", ErrApply, r.Name, r.Mechanism)
	}
	if !b.scramOwned {
		b.img.ScramCredentials = cloneMap(b.img.ScramCredentials)
		b.scramOwned = true
	}
	user := cloneMap(b.img.ScramCredentials[r.Name])
	if r.Remove {
		if _, ok := user[r.Mechanism]; !ok {
			return fmt.Errorf("%w: removal of unknown SCRAM credential of user %q mechanism %d", ErrApply, r.Name, r.Mechanism)
		}
		delete(user, r.Mechanism)
	} else {
		if len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0 || r.Iterations <= 0 {
			return fmt.Errorf("%w: incomplete SCRAM credential of user %q", ErrApply, r.Name)
		}
		user[r.Mechanism] = r.ScramCredential
	}
	if len(user) == 0 {
		delete(b.img.ScramCredentials, r.Name)
	} else {
		b.img.ScramCredentials[r.Name] = user
	}
	return nil
}

// scramRecords returns the records that rebuild img's SCRAM credentials,
// by user and mechanism, for snapshots.
func scramRecords(recs []Record, img *Image) []Record {
	for _, name := range slices.Sorted(maps.Keys(img.ScramCredentials)) {
		user := img.ScramCredentials[name]
		for _, m := range slices.Sorted(maps.Keys(user)) {
			recs = append(recs, ScramCredentialRecord{Name: name, Mechanism: m, ScramCredential: user[m]})
		}
	}
	return recs
}

// ScramDeletion removes a user's credential for one mechanism.
type ScramDeletion struct {
	Name      string
	Mechanism int8
}

// ScramUpsertion sets a user's credential for one mechanism; the broker
// has already turned the salted password into the stored and server keys.
type ScramUpsertion struct {
	Name      string
	Mechanism int8
	ScramCredential
}

// ScramResult is the outcome for one user of AlterUserScramCredentials.
type ScramResult struct {
	User      string
	ErrorCode int16
	Message   string
}

// AlterUserScramCredentials applies deletions and upsertions as Kafka's
// ScramControlManager: every operation of a user is checked first, a user
// may appear once per request, and a user with any failing operation has
// none applied. Results are one per
// user, in the order users first appear (deletions, then upsertions).
func (c *Controller) AlterUserScramCredentials(dels []ScramDeletion, ups []ScramUpsertion) []ScramResult {
	var order []string
	results := map[string]*ScramResult{}
	result := func(u string) *ScramResult {
		r, ok := results[u]
		if !ok {
			r = &ScramResult{User: u}
			results[u] = r
			order = append(order, u)
		}
		return r
	}
	fail := func(u string, code int16, msg string) {
		if r := result(u); r.ErrorCode == 0 {
			r.ErrorCode, r.Message = code, msg
		}
	}
	// Kafka refuses a user named twice in one request, even for two
	// mechanisms or a deletion and an upsertion (checked against Kafka
	// 4.4 by compat-tests/scram_diff_test.go).
	seen := map[string]bool{}
	for _, d := range dels {
		result(d.Name)
	}
	for _, u := range ups {
		result(u.Name)
	}
	check := func(name string, mech int8) bool {
		if name == "" {
			fail(name, kerr.UnacceptableCredential.Code, "Username must not be empty")
			return false
		}
		if ScramMechanismName(mech) == "" {
			fail(name, kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
			return false
		}
		if seen[name] {
			fail(name, kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
			return false
		}
		seen[name] = true
		return true
	}
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		for _, d := range dels {
			if !check(d.Name, d.Mechanism) {
				continue
			}
			if _, ok := img.ScramCredentials[d.Name][d.Mechanism]; !ok {
				fail(d.Name, kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
				continue
			}
			recs = append(recs, ScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism, Remove: true})
		}
		for _, u := range ups {
			if !check(u.Name, u.Mechanism) {
				continue
			}
			switch {
			case u.Iterations < ScramMinIterations:
				fail(u.Name, kerr.UnacceptableCredential.Code, "Too few iterations")
				continue
			case u.Iterations > ScramMaxIterations:
				fail(u.Name, kerr.UnacceptableCredential.Code, "Too many iterations")
				continue
			case len(u.Salt) == 0:
				fail(u.Name, kerr.UnacceptableCredential.Code, "Salt must not be empty")
				continue
			}
			recs = append(recs, ScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism, ScramCredential: u.ScramCredential})
		}
		// A user with any failure gets none of its changes.
		kept := recs[:0]
		for _, r := range recs {
			if results[r.(ScramCredentialRecord).Name].ErrorCode == 0 {
				kept = append(kept, r)
			}
		}
		return kept
	})
	out := make([]ScramResult, 0, len(order))
	for _, u := range order {
		r := results[u]
		if err != nil && overrides(r.ErrorCode, err) {
			r.ErrorCode, r.Message = errorCode(err)
		}
		out = append(out, *r)
	}
	return out
}

// ScramHash returns the hash function of a mechanism (SHA-512 for
// ScramSHA512, else SHA-256).
func ScramHash(mech int8) func() hash.Hash {
	if mech == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// ScramCredentialFromSalted computes the stored credential from a salted
// password (RFC 5802: StoredKey = H(HMAC(salted, "Client Key")),
// ServerKey = HMAC(salted, "Server Key")), which is what
// AlterUserScramCredentials carries: the client does the PBKDF2 work and
// the password never reaches the broker.
func ScramCredentialFromSalted(mech int8, salt, salted []byte, iterations int32) ScramCredential {
	h := ScramHash(mech)
	mac := func(msg string) []byte {
		m := hmac.New(h, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	sum := h()
	sum.Write(mac("Client Key"))
	return ScramCredential{Salt: salt, StoredKey: sum.Sum(nil), ServerKey: mac("Server Key"), Iterations: iterations}
}
