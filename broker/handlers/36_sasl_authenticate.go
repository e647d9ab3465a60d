package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslAuthenticate, key 36, versions 0-2.
//
//   - v1: session_lifetime_ms (KIP-368, connections.max.reauth.ms).
//   - v2: flexible.
//
// The SASL exchange itself is run by the connection (broker/sasl.go). A
// SaslAuthenticate that reaches this table is out of place (no SASL on the
// listener, or no handshake first) and answered ILLEGAL_SASL_STATE, as
// Kafka's KafkaApis does.
func handleSaslAuthenticate(_ *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "Unexpected SASL request: SaslAuthenticate out of a SASL exchange"
	resp.ErrorMessage = &msg
	return resp, nil
}
