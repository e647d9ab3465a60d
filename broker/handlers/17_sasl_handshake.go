package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake, key 17, versions 0-1.
//
// On a SASL listener the connection answers SaslHandshake itself before
// authentication (broker/sasl.go): v0 switches to bare tokens, v1 to
// SaslAuthenticate. A handshake that reaches this table is one on a
// listener without SASL or on an already authenticated connection, which
// Kafka's KafkaApis answers ILLEGAL_SASL_STATE.
func handleSaslHandshake(_ *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}
