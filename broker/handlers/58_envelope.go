package handlers

import (
	"fmt"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// Envelope, key 58, version 0 (flexible), controller listeners only.
//
// KIP-590: a node that is not the active controller forwards a request
// that changes cluster metadata (Entry.Forward) wrapped in an Envelope
// with the client's principal and address, so that the active controller
// authorizes the client, not the forwarding node. RequestData is the
// client's request frame without its size prefix; ResponseData is the
// response frame, also without it, carrying the client's correlation id.
//
// The principal travels as its "Type:name" text (Kafka serializes a
// KafkaPrincipal with its principal builder; samsa nodes only talk to
// samsa nodes). Like BrokerRegistration, the Envelope needs CLUSTER_ACTION
// of the sender, as in Kafka, on a TLS or SASL controller listener with an
// authorizer (authz_controller.go); on a PLAINTEXT one it is trusted, as
// the controller port is kept on the cluster's network.
//
// A request that is not a forwardable API, or does not parse, is
// INVALID_REQUEST.
func handleEnvelope(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EnvelopeRequest)
	resp := req.ResponseKind().(*kmsg.EnvelopeResponse)
	hdr, inner, err := wire.ParseRequest(req.RequestData)
	if err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	var entry *Entry
	for _, e := range Table() {
		if e.Key == hdr.APIKey && e.Forward && hdr.APIVersion >= e.MinVersion && hdr.APIVersion <= e.MaxVersion {
			entry = &e
			break
		}
	}
	if entry == nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	host := ""
	if addr, ok := netip.AddrFromSlice(req.ClientHostAddress); ok {
		host = addr.Unmap().String()
	}
	// Controller: the request came through the controller listener, as
	// forwarded requests always did (an alter of another node's BROKER
	// configs was checked by the node that forwarded it).
	ir := &Request{Header: hdr, Body: inner, ClientHost: host, Principal: string(req.RequestPrincipal), Controller: true, Forwarded: true}
	out, err := Serve(*entry, d, ir)
	if err != nil {
		return nil, fmt.Errorf("enveloped %s: %w", kmsg.NameForKey(hdr.APIKey), err)
	}
	frame := wire.AppendResponse(nil, hdr, out)
	resp.ResponseData = frame[4:]
	return resp, nil
}

// EnvelopeFor wraps a client's request frame (without its size prefix)
// for forwarding to the active controller, with the client's principal
// and IP address.
func EnvelopeFor(frame []byte, principal, clientHost string) *kmsg.EnvelopeRequest {
	req := kmsg.NewPtrEnvelopeRequest()
	req.RequestData = frame
	req.RequestPrincipal = []byte(principal)
	if addr, err := netip.ParseAddr(clientHost); err == nil {
		req.ClientHostAddress = addr.AsSlice()
	}
	return req
}
