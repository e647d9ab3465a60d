// Command samsa runs one samsa node: a Kafka-compatible broker and its
// metadata controller in one process.
//
//	samsa                                  # PLAINTEXT on localhost:9092, data in ./samsa-data
//	samsa --config server.properties       # Kafka's server.properties names
//	samsa --override log.dirs=/var/lib/samsa --override num.partitions=3
//	samsa topics create orders --partitions 3   # admin commands: see cli.go
//
// KAFKA_* environment variables are read as the apache/kafka image reads
// them (KAFKA_ADVERTISED_LISTENERS -> advertised.listeners).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-broker/samsa/broker"
	"github.com/samsa-broker/samsa/config"
)

func main() {
	// samsa topics|groups|produce|consume|cluster|health|--version: the
	// admin CLI (cli.go); anything else serves a broker.
	if code, handled := dispatch(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, environ); handled {
		os.Exit(code)
	}
	logger := newLogger(os.Stderr, nil)
	if err := run(&logger); err != nil {
		logger.Error("samsa stopped", "err", err)
		os.Exit(1)
	}
}

// run serves a broker until SIGINT or SIGTERM. It replaces *loggerp with the
// logger the configuration asks for (samsa.log.format, samsa.log.level) once
// it is loaded, so that main logs the final error in the same format.
func run(loggerp **slog.Logger) error {
	cfg, err := config.Load(os.Args[1:], os.Environ())
	if err != nil {
		if errors.Is(err, config.ErrHelp) {
			fmt.Fprintln(os.Stdout, config.Usage()+cliUsage())
			return nil
		}
		return err
	}
	*loggerp = newLogger(os.Stderr, cfg)
	logger := *loggerp
	defer startGCFloor(defaultGCFloor, os.Getenv).stop() // gcfloor.go
	logEffectiveConfig(logger, cfg)
	for _, n := range cfg.Notices {
		logger.Log(context.Background(), n.Level, n.Msg, n.Args...)
	}
	// Signals are caught before the node starts so that a SIGTERM during
	// start-up still gets a clean shutdown.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	node, err := broker.StartNodeWith(cfg, logger, broker.NodeOptions{OnAllLogDirsFailed: haltOnLogDirFailure(logger, os.Exit), Halt: haltOnNodeFailure(logger, os.Exit)})
	if err != nil {
		return err
	}
	for i, a := range node.Addrs() {
		name := node.Listeners()[i].Name
		adv := "not advertised"
		if l, ok := node.AdvertisedFor(name); ok {
			adv = "advertised " + l.String()
		}
		fmt.Fprintf(os.Stdout, "samsa: node %d listening on %s://%s (%s), data in %s\n",
			cfg.NodeID, name, a, adv, strings.Join(cfg.LogDirs, ","))
	}
	sig := <-sigs
	logger.Info("shutting down", "signal", sig.String())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := node.Close(ctx); err != nil {
		return err
	}
	logger.Info("stopped cleanly")
	return nil
}
