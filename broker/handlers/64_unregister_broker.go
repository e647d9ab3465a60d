package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UnregisterBroker, key 64, version 0 (KIP-500): remove a broker's
// registration (kafka-cluster.sh unregister, Admin.unregisterBroker),
// typically of a broker that is gone for good.
//
//   - Forwarded to the active controller from other nodes.
//   - An id that is not registered is BROKER_ID_NOT_REGISTERED.
//   - As in Kafka, a registered broker is unregistered whether it is
//     fenced or not: it is fenced first (its leaderships move, it leaves
//     the ISRs), then its registration goes. A broker process that still
//     runs registers again (its heartbeats fail), like Kafka's.
func handleUnregisterBroker(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	code, err := d.Controller.UnregisterBroker(req.BrokerID)
	if err != nil {
		code = controllerErrorCode(err)
	}
	resp.ErrorCode = code
	if code != 0 {
		resp.ErrorMessage = ptrTo(kerr.ErrorForCode(code).Error())
	}
	return resp, nil
}
