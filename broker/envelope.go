package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/handlers"
)

// errEnvelope is a forwarded request the active controller refused as a
// whole (EnvelopeResponse error code).
var errEnvelope = errors.New("broker: envelope refused by the active controller")

// ForwardEnveloped sends a client's request frame (without its size
// prefix) to the active controller in an Envelope with the client's
// principal and address (KIP-590, handlers/58_envelope.go), so that the
// controller authorizes the client rather than this node, and returns the
// response frame (with its size prefix, carrying the client's correlation
// id: the client cannot tell it was forwarded). It replaces the forwarding
// of the bare frame, which the controller could only authorize as the
// forwarding node.
func (c *controllerChannel) ForwardEnveloped(ctx context.Context, frame []byte, principal, clientHost string) ([]byte, error) {
	resp, err := c.Request(ctx, handlers.EnvelopeFor(frame, principal, clientHost), 0)
	if err != nil {
		return nil, err
	}
	env := resp.(*kmsg.EnvelopeResponse)
	if env.ErrorCode != 0 {
		return nil, fmt.Errorf("%w: %w", errEnvelope, kerr.ErrorForCode(env.ErrorCode))
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(env.ResponseData)), uint32(len(env.ResponseData)))
	return append(out, env.ResponseData...), nil
}
