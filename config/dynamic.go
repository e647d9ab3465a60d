package config

import (
	"fmt"
	"maps"
	"sort"
)

// WithDynamic returns a copy of c with dynamic broker configs layered over
// the static configuration, as AlterConfigs on a BROKER resource stores
// them: clusterDefault for the "" resource (every broker) and perBroker for
// this node's resource, which wins. Only settings whose Def is Dynamic take
// effect; the names of others are returned in skipped, sorted (Kafka
// refuses them at AlterConfigs time, so they can only come from an older
// image). A value that does not validate is an error naming the setting.
// c itself is not modified; calling WithDynamic on its result starts again
// from the static configuration.
func (c *Config) WithDynamic(clusterDefault, perBroker map[string]string) (out *Config, skipped []string, err error) {
	values, sources := c.staticValues, c.staticSources
	if values == nil { // a Config built by hand
		values, sources = c.Values, c.Sources
	}
	values, sources = copyMap(values), copyMap(sources)
	known := make(map[string]Def, len(BrokerDefs))
	for _, d := range BrokerDefs {
		known[d.Name] = d
	}
	for _, layer := range []struct {
		m      map[string]string
		source Source
	}{{clusterDefault, SourceDynamicDefaultBroker}, {perBroker, SourceDynamicBroker}} {
		names := make([]string, 0, len(layer.m))
		for n := range layer.m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			d, ok := known[n]
			if !ok || !d.Dynamic {
				skipped = append(skipped, n)
				continue
			}
			if err := d.Validate(layer.m[n]); err != nil {
				return nil, nil, fmt.Errorf("%w for %s=%q (%s): %v", ErrInvalidValue, n, layer.m[n], layer.source, err)
			}
			values[n], sources[n] = layer.m[n], layer.source
		}
	}
	out, err = decode(values, sources)
	if err != nil {
		return nil, nil, err
	}
	out.Ignored, out.Warnings, out.UnknownEnv, out.Unknown, out.Notices = c.Ignored, c.Warnings, c.UnknownEnv, c.Unknown, c.Notices
	out.OtherValues, out.jaasFile = c.OtherValues, c.jaasFile
	out.staticValues, out.staticSources = c.staticValues, c.staticSources
	out.Security, out.InterBrokerListenerName = c.Security, c.InterBrokerListenerName
	for _, l := range out.Listeners {
		if _, ok := c.Security.Listeners[l.Name]; !ok && out.ListenerSecurityProtocolMap[l.Name] != "PLAINTEXT" {
			return nil, nil, fmt.Errorf("%w: listener %s (%s) added at runtime: samsa sets up listener security at start only", ErrUnsupported, l.Name, out.ListenerSecurityProtocolMap[l.Name])
		}
	}
	if err := out.Validate(); err != nil {
		return nil, nil, err
	}
	sort.Strings(skipped)
	return out, dedupe(skipped), nil
}

func copyMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
