package acl

import (
	"fmt"
	"testing"
)

// benchACLs is a cluster with n topic ACLs (literal and prefixed, for 100
// principals) plus group ACLs.
func benchACLs(n int) []Binding {
	var acls []Binding
	for i := range n {
		p := fmt.Sprintf("User:u%d", i%100)
		if i%4 == 0 {
			acls = append(acls, allow(topicT, fmt.Sprintf("team%d-", i), prefixed, p, "*", opRead))
		} else {
			acls = append(acls, allow(topicT, fmt.Sprintf("topic-%d", i), literal, p, "*", opWrite))
		}
		acls = append(acls, allow(groupT, fmt.Sprintf("g-%d", i), literal, p, "*", opRead))
	}
	return acls
}

// BenchmarkAuthorize compares one decision over every ACL with one over
// the index's candidates, with 10,000 topic ACLs.
func BenchmarkAuthorize(b *testing.B) {
	acls := benchACLs(10000)
	req := Request{Principal: "User:u7", Host: "10.0.0.1"}
	res := Topic("topic-7")
	var a Authorizer
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			a.Authorize(acls, req, opWrite, res)
		}
	})
	ix := NewIndex(acls)
	b.Run("indexed", func(b *testing.B) {
		for b.Loop() {
			a.Authorize(ix.Candidates(res), req, opWrite, res)
		}
	})
	b.Run("index-build", func(b *testing.B) {
		for b.Loop() {
			NewIndex(acls)
		}
	})
}
