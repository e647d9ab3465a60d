package main

import (
	"log/slog"

	"github.com/samsa-broker/samsa/storage"
)

// haltOnLogDirFailure returns the callback that ends the process when every
// log directory has failed: like Kafka's LogManager.handleLogDirFailure it
// logs "Shutdown broker because all log dirs in ... have failed" and halts
// with exit code 1 without a clean shutdown (no controlled shutdown, no
// checkpoint writes on a failed disk). The controller moves the node's
// leaderships once its session times out; the operator, or the
// container's restart policy, restarts it once the disk is usable again.
func haltOnLogDirFailure(logger *slog.Logger, exit func(code int)) func(dirs []string, err error) {
	return func(dirs []string, err error) {
		logger.Error(storage.AllLogDirsFailedMessage(dirs), "err", err)
		exit(1)
	}
}

// haltOnNodeFailure returns broker.NodeOptions.Halt: it logs msg (Kafka's
// message: the metadata log directory failed, or a failed log directory
// could not be reported to the controller) at ERROR and exits with code 1,
// as Kafka halts then.
func haltOnNodeFailure(logger *slog.Logger, exit func(code int)) func(msg string, err error) {
	return func(msg string, err error) {
		logger.Error(msg, "err", err)
		exit(1)
	}
}
