package broker

import (
	"net"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// advertised returns the listeners clients are told to connect to: every
// advertised listener that is not a controller listener, in the order of
// advertised.listeners (the first is the broker's default address). An
// empty or meta-address host is replaced by the machine's host name, as
// Kafka does; port 0 (listeners=PLAINTEXT://127.0.0.1:0 in tests) by the
// port the client listener of the same name is bound to. listeners and
// bound are the client listeners and their addresses, in the same order.
func advertised(cfg *config.Config, listeners []config.Listener, bound []net.Addr) []config.Listener {
	var out []config.Listener
	for _, l := range cfg.AdvertisedListeners {
		if isControllerListener(cfg, l.Name) {
			continue
		}
		if l.Port == 0 && len(bound) > 0 {
			l.Port = bound[0].(*net.TCPAddr).Port
			for i, bl := range listeners {
				if bl.Name == l.Name && i < len(bound) {
					l.Port = bound[i].(*net.TCPAddr).Port
				}
			}
		}
		if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
			if h, err := os.Hostname(); err == nil {
				l.Host = h
			} else {
				l.Host = "localhost"
			}
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		out = append(out, config.Listener{Name: "PLAINTEXT", Host: "localhost", Port: 9092})
	}
	return out
}

// brokerListeners is the metadata image's form of advertised listeners.
func brokerListeners(ls []config.Listener) []controller.BrokerListener {
	out := make([]controller.BrokerListener, 0, len(ls))
	for _, l := range ls {
		out = append(out, controller.BrokerListener{Name: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	return out
}

// registrationListeners is BrokerRegistration's form of advertised
// listeners. Only PLAINTEXT (security protocol 0) is served so far.
func registrationListeners(ls []config.Listener) []kmsg.BrokerRegistrationRequestListener {
	out := make([]kmsg.BrokerRegistrationRequestListener, 0, len(ls))
	for _, l := range ls {
		out = append(out, kmsg.BrokerRegistrationRequestListener{Name: l.Name, Host: l.Host, Port: uint16(l.Port), SecurityProtocol: 0})
	}
	return out
}
