package diff

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// addrPattern matches a loopback host:port as both brokers of the suite
// listen on.
var addrPattern = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// maskedConfigs are the broker settings whose values hold what differs
// between two brokers run side by side: their ports (listeners,
// advertised.listeners, controller.quorum.voters) and data directories
// (log.dirs). maskConfigValues replaces addresses by "<addr>" and
// directories by "<dir>", in values and synonyms, so the rest of the value
// (listener names, protocols, the number of entries) still compares.
var maskedConfigs = map[string]func(string) string{
	"listeners":                func(v string) string { return addrPattern.ReplaceAllString(v, "<addr>") },
	"advertised.listeners":     func(v string) string { return addrPattern.ReplaceAllString(v, "<addr>") },
	"controller.quorum.voters": func(v string) string { return addrPattern.ReplaceAllString(v, "<addr>") },
	"log.dirs":                 func(string) string { return "<dir>" },
}

// maskConfigValues masks the values of maskedConfigs in a DescribeConfigs
// response.
func maskConfigValues(r *kmsg.DescribeConfigsResponse) {
	mask := func(name string, v *string) *string {
		f, ok := maskedConfigs[name]
		if !ok || v == nil || *v == "" {
			return v
		}
		m := f(*v)
		return &m
	}
	for i := range r.Resources {
		for j := range r.Resources[i].Configs {
			c := &r.Resources[i].Configs[j]
			c.Value = mask(c.Name, c.Value)
			for k := range c.ConfigSynonyms {
				s := &c.ConfigSynonyms[k]
				s.Value = mask(s.Name, s.Value)
			}
		}
	}
}
