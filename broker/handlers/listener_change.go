package handlers

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/config"
)

// listenerChangeRefusal checks a change of this node's listeners or
// listener.security.protocol.map (per-broker dynamic settings in Kafka
// 4.4) among a BROKER resource's new dynamic configs, against the
// listeners the node serves now (stored, the resource's dynamic configs
// before the change, over the static ones). Kafka's refusals, with its
// answers (INVALID_REQUEST; kafka-ref, sessions 32 and 33, and
// DynamicListenerConfig.validateReconfiguration and KafkaConfig's
// requirements read with javap): a listener whose name has no security
// protocol, a controller that would lose its controller listener,
// advertised.listeners naming a listener that would no longer exist (or,
// without static advertised.listeners, the inter-broker listener gone),
// a listener kept with another security protocol. Kafka 4.4 then binds the
// listeners added and closes the ones removed, and so does samsa
// (broker/listener_runtime.go): a listener it adds must be servable
// first (validate: its TLS and SASL settings load and its address binds),
// else INVALID_CONFIG with the reason, where Kafka would store the change
// and log the failure. A listener kept under its name with another
// address is accepted and keeps its socket, as in Kafka.
func listenerChangeRefusal(cfg *config.Config, stored, configs map[string]string, validate func(added, removed []config.Listener, protocols, dynamic map[string]string) error) (int16, string) {
	rawListeners, setListeners := configs["listeners"]
	rawMap, setMap := configs["listener.security.protocol.map"]
	old, had := stored["listeners"]
	oldMap, hadMap := stored["listener.security.protocol.map"]
	if setListeners == had && old == rawListeners && setMap == hadMap && oldMap == rawMap {
		return 0, ""
	}
	current, currentMap, _ := cfg.EffectiveListeners(stored)
	listeners, protocols, err := cfg.EffectiveListeners(configs)
	if err != nil {
		return 0, "" // left to the setting's validator
	}
	var given []string
	for _, item := range strings.Split(rawListeners, ",") {
		if s := strings.TrimSpace(item); s != "" {
			given = append(given, s)
		}
	}
	if !setListeners {
		for _, l := range listeners {
			given = append(given, l.String())
		}
	}
	names := make([]string, 0, len(listeners))
	var clientNames []string
	hasController := false
	for _, l := range listeners {
		if _, ok := protocols[strings.ToUpper(l.Name)]; !ok {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Error creating broker listeners from '[%s]': No security protocol defined for listener %s", strings.Join(given, ", "), l.Name)
		}
		names = append(names, strings.ToUpper(l.Name))
		if cfg.IsControllerListener(l.Name) {
			hasController = true
		} else {
			clientNames = append(clientNames, strings.ToUpper(l.Name))
		}
	}
	if why, port := duplicatePorts(listeners); why != "" {
		msg := fmt.Sprintf("Error creating broker listeners from '[%s]': %s, listeners: [%s]", strings.Join(given, ", "), why, strings.Join(given, ", "))
		if port > 0 {
			msg += fmt.Sprintf(", port: %d", port)
		}
		return kerr.InvalidRequest.Code, msg
	}
	if cfg.HasRole("controller") && !hasController && slices.ContainsFunc(current, func(l config.Listener) bool { return cfg.IsControllerListener(l.Name) }) {
		return kerr.InvalidRequest.Code, "requirement failed: controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role"
	}
	if cfg.Sources["advertised.listeners"] == config.SourceStatic {
		for _, a := range cfg.AdvertisedListeners {
			if !slices.Contains(names, strings.ToUpper(a.Name)) {
				return kerr.InvalidRequest.Code, fmt.Sprintf("requirement failed: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found %s. The valid options based on the current configuration are %s",
					strings.ToUpper(a.Name), strings.Join(names, ","))
			}
		}
	} else if cfg.HasRole("broker") && cfg.InterBrokerListenerName != "" && !slices.Contains(clientNames, strings.ToUpper(cfg.InterBrokerListenerName)) {
		return kerr.InvalidRequest.Code, fmt.Sprintf("requirement failed: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are %s",
			strings.Join(clientNames, ","))
	}
	var added, removed []config.Listener
	for _, l := range listeners {
		name := strings.ToUpper(l.Name)
		if !slices.ContainsFunc(current, func(o config.Listener) bool { return strings.EqualFold(o.Name, name) }) {
			added = append(added, l)
			continue
		}
		if old := currentMap[name]; old != "" && old != protocols[name] {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid value org.apache.kafka.common.config.ConfigException: Security protocol cannot be updated for existing listener ListenerName(%s) for configuration Invalid dynamic configuration", name)
		}
	}
	for _, l := range current {
		if !slices.Contains(names, strings.ToUpper(l.Name)) {
			removed = append(removed, l)
		}
	}
	if len(added) > 0 && validate != nil {
		if err := validate(added, removed, protocols, configs); err != nil {
			return kerr.InvalidConfig.Code, "Cannot add the listener: " + err.Error()
		}
	}
	return 0, ""
}

// duplicatePorts is Kafka's check of listeners sharing a port
// (SocketServerConfigs.listenerListToEndPoints; port 0 exempt): two may
// share one only when one host is an IPv4 address and the other an IPv6
// address. It returns Kafka's reason and the port, or "".
func duplicatePorts(listeners []config.Listener) (string, int) {
	byPort := map[int][]config.Listener{}
	var ports []int
	for _, l := range listeners {
		if l.Port == 0 {
			continue
		}
		if len(byPort[l.Port]) == 0 {
			ports = append(ports, l.Port)
		}
		byPort[l.Port] = append(byPort[l.Port], l)
	}
	for _, port := range ports {
		ls := byPort[port]
		if len(ls) < 2 {
			continue
		}
		var ips []netip.Addr
		named := 0
		for _, l := range ls {
			if a, err := netip.ParseAddr(l.Host); err == nil {
				ips = append(ips, a)
			} else {
				named++
			}
		}
		switch {
		case named > 1:
			return "Each listener must have a different port", 0 // Kafka names no port here
		case len(ips) == 2 && (ips[0].Is4() == ips[1].Is4() || named > 0):
			return "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6", port
		case len(ips) > 2:
			return "Each listener must have a different port unless exactly one listener has an IPv4 address and the other IPv6 address", port
		}
	}
	return "", 0
}
