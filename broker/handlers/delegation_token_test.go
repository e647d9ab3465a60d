package handlers

import "testing"

// TestTokenRequestsAllowed is Kafka's KafkaApis.allowTokenRequests:
// tokens only over SASL or over TLS with a client certificate, never
// from a connection authenticated with a token; a forwarded request was
// checked by the node that forwarded it.
func TestTokenRequestsAllowed(t *testing.T) {
	for _, tc := range []struct {
		r    Request
		want bool
	}{
		{Request{SecurityProtocol: "PLAINTEXT", Principal: anonymousPrincipal}, false},
		{Request{SecurityProtocol: "", Principal: anonymousPrincipal}, false},
		{Request{SecurityProtocol: "SSL", Principal: anonymousPrincipal}, false},
		{Request{SecurityProtocol: "SSL", Principal: "User:CN=alice"}, true},
		{Request{SecurityProtocol: "SASL_PLAINTEXT", Principal: "User:alice"}, true},
		{Request{SecurityProtocol: "SASL_SSL", Principal: "User:alice"}, true},
		{Request{SecurityProtocol: "SASL_SSL", Principal: "User:alice", TokenAuthenticated: true}, false},
		{Request{SecurityProtocol: "SASL_PLAINTEXT", Principal: "User:alice", TokenAuthenticated: true}, false},
		{Request{Principal: "User:alice", Forwarded: true}, true},
	} {
		if got := tokenRequestsAllowed(&tc.r); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.r, got, tc.want)
		}
	}
}
