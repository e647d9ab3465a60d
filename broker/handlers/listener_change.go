package handlers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/config"
)

// listenerChangeRefusal checks a change of this node's listeners or
// listener.security.protocol.map (per-broker dynamic settings in Kafka
// 4.4) among a BROKER resource's new dynamic configs. Kafka's refusals
// come first, with its answers (INVALID_REQUEST; kafka-ref, session 32,
// and DynamicListenerConfig.validateReconfiguration read with javap): a
// listener whose name has no security protocol, advertised.listeners
// naming a listener that would no longer exist, a listener kept with
// another security protocol. Kafka 4.4 then binds the listeners added and
// closes the ones removed at once; samsa cannot yet (its listeners, their
// TLS and SASL are set up when the node starts), so it refuses any change
// of the set of listeners or of their protocols with INVALID_CONFIG and
// the reason, rather than store a value it does not act on. A value equal
// to the current one is accepted. stored are the resource's dynamic
// configs before the change: a value stored already (by an older samsa)
// and left alone does not block changes of other settings.
func listenerChangeRefusal(cfg *config.Config, stored, configs map[string]string) (int16, string) {
	rawListeners, setListeners := configs["listeners"]
	rawMap, setMap := configs["listener.security.protocol.map"]
	old, had := stored["listeners"]
	oldMap, hadMap := stored["listener.security.protocol.map"]
	if (!setListeners || (had && old == rawListeners)) && (!setMap || (hadMap && oldMap == rawMap)) {
		return 0, ""
	}
	listeners := cfg.Listeners
	if setListeners {
		var err error
		if listeners, err = config.ParseListeners(rawListeners); err != nil {
			return 0, "" // left to the setting's validator
		}
	}
	protocols := cfg.ListenerSecurityProtocolMap
	if setMap {
		m, err := config.ParseProtocolMap(rawMap)
		if err != nil {
			return 0, ""
		}
		protocols = m
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
	for _, l := range listeners {
		if _, ok := protocols[strings.ToUpper(l.Name)]; !ok {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Error creating broker listeners from '[%s]': No security protocol defined for listener %s", strings.Join(given, ", "), l.Name)
		}
		names = append(names, strings.ToUpper(l.Name))
	}
	if cfg.Sources["advertised.listeners"] == config.SourceStatic {
		for _, a := range cfg.AdvertisedListeners {
			if !slices.Contains(names, strings.ToUpper(a.Name)) {
				return kerr.InvalidRequest.Code, fmt.Sprintf("requirement failed: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found %s. The valid options based on the current configuration are %s",
					strings.ToUpper(a.Name), strings.Join(names, ","))
			}
		}
	}
	changed := len(listeners) != len(cfg.Listeners)
	for _, l := range listeners {
		name := strings.ToUpper(l.Name)
		i := slices.IndexFunc(cfg.Listeners, func(o config.Listener) bool { return strings.EqualFold(o.Name, name) })
		if i < 0 {
			changed = true
			continue
		}
		if old := cfg.ListenerSecurityProtocolMap[name]; old != "" && old != protocols[name] {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Invalid value org.apache.kafka.common.config.ConfigException: Security protocol cannot be updated for existing listener ListenerName(%s) for configuration Invalid dynamic configuration", name)
		}
		if o := cfg.Listeners[i]; !strings.EqualFold(o.Host, l.Host) || o.Port != l.Port {
			changed = true
		}
	}
	if changed {
		return kerr.InvalidConfig.Code, "samsa does not add, remove or move listeners at runtime (Kafka 4.4 does): set listeners and listener.security.protocol.map in server.properties and restart the node"
	}
	return 0, ""
}
