package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// AlterUserScramCredentials, key 51, version 0 (flexible).
//
// Deletions and upsertions of SCRAM credentials, stored in the metadata log
// (controller.AlterUserScramCredentials): the request carries the salt and
// the salted password (the client ran PBKDF2), from which the broker keeps
// only the stored and server keys. One result per user: an unknown
// mechanism is UNSUPPORTED_SASL_MECHANISM, an empty user name, fewer than
// 4096 or more than 16384 iterations, an empty salt or salted password
// UNACCEPTABLE_CREDENTIAL, deleting a missing credential
// RESOURCE_NOT_FOUND, and a user named twice in the request (even for
// two mechanisms) DUPLICATE_RESOURCE, as Kafka 4.4 answers; a user with
// any failure has none of its changes applied. Forwarded to the active
// controller.
func handleAlterUserScramCredentials(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	dels := make([]controller.ScramDeletion, 0, len(req.Deletions))
	for _, del := range req.Deletions {
		dels = append(dels, controller.ScramDeletion{Name: del.Name, Mechanism: del.Mechanism})
	}
	var bad []controller.ScramResult
	ups := make([]controller.ScramUpsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		if len(u.SaltedPassword) == 0 && controller.ScramMechanismName(u.Mechanism) != "" && u.Name != "" {
			bad = append(bad, controller.ScramResult{User: u.Name, ErrorCode: kerr.UnacceptableCredential.Code, Message: "Salted password must not be empty"})
			continue
		}
		var cred controller.ScramCredential
		if controller.ScramMechanismName(u.Mechanism) != "" && len(u.SaltedPassword) > 0 {
			cred = controller.ScramCredentialFromSalted(u.Mechanism, u.Salt, u.SaltedPassword, u.Iterations)
		} else {
			cred.Salt, cred.Iterations = u.Salt, u.Iterations
		}
		ups = append(ups, controller.ScramUpsertion{Name: u.Name, Mechanism: u.Mechanism, ScramCredential: cred})
	}
	results := d.Controller.AlterUserScramCredentials(dels, ups)
	for _, b := range bad {
		replaced := false
		for i := range results {
			if results[i].User == b.User {
				results[i].ErrorCode, results[i].Message = b.ErrorCode, b.Message
				replaced = true
			}
		}
		if !replaced {
			results = append(results, b)
		}
	}
	for _, res := range results {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User = res.User
		rr.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 {
			rr.ErrorMessage = ptrTo(res.Message)
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}
