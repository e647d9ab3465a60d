package main

import (
	"os"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/cmd/internal/clientsec"
	"github.com/samsa-broker/samsa/config"
)

// securityOpts turns a Kafka client properties file (--command-config, as
// the Kafka tools take it) into client options (cmd/internal/clientsec).
func securityOpts(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--command-config: %v", err)
	}
	props, err := config.ParseClientProperties(string(data))
	if err != nil {
		return nil, usagef("--command-config %s: %v", path, err)
	}
	opts, err := clientsec.Options(props)
	if err != nil {
		return nil, usagef("--command-config %s: %v", path, err)
	}
	return opts, nil
}
