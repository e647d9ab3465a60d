package handlers

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeUserScramCredentials, key 50, version 0 (flexible).
//
// Answered from the metadata image, as Kafka's ScramImage.describe: no
// users (null or empty) describes every user with a credential; a user
// named twice gets one result with DUPLICATE_RESOURCE "Cannot describe
// SCRAM credentials for the same user twice in a single request: <user>";
// a user without credentials RESOURCE_NOT_FOUND "Attempt to describe a
// user credential that does not exist: <user>". Each result lists the
// mechanisms and iteration counts, never salts or keys. Results are sorted
// by user (Kafka's order is its hash map's). Users of the configuration
// (bitnami's KAFKA_CLIENT_USERS) are not in the metadata and not listed.
func handleDescribeUserScramCredentials(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	// Kafka 4.4 leaves the messages of the response and of each
	// successful result at their default, "".
	resp.ErrorMessage = ptrTo("")
	creds := d.Controller.Image().ScramCredentials
	dup := map[string]bool{}
	if len(req.Users) == 0 {
		for u := range creds {
			dup[u] = false
		}
	} else {
		for _, u := range req.Users {
			_, seen := dup[u.Name]
			dup[u.Name] = seen
		}
	}
	for _, u := range slices.Sorted(maps.Keys(dup)) {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		user, ok := creds[u]
		switch {
		case dup[u]:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = ptrTo("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case !ok:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = ptrTo("Attempt to describe a user credential that does not exist: " + u)
		default:
			res.ErrorMessage = ptrTo("")
			for _, m := range slices.Sorted(maps.Keys(user)) {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism = m
				info.Iterations = user[m].Iterations
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func ptrTo[T any](v T) *T { return &v }
