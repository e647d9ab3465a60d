package controller

import "errors"

// Internal errors. Kafka errors are not here: they are kerr codes returned as data.
var (
	// ErrBadUuid reports a topic id that is not 22 characters of base64url.
	ErrBadUuid = errors.New("controller: malformed uuid")
	// ErrApply reports a record that cannot be applied to the image; on replay
	// this means the log is inconsistent, on commit it is a bug in a decision.
	ErrApply = errors.New("controller: cannot apply record")
	// ErrCorrupt reports log bytes that pass no check and are not a torn tail.
	ErrCorrupt = errors.New("controller: corrupt metadata log")
	// ErrUnsupportedVersion reports a file or frame written by a newer samsa.
	ErrUnsupportedVersion = errors.New("controller: unsupported metadata format version")
	// ErrUnknownRecord reports a record type this build does not know.
	ErrUnknownRecord = errors.New("controller: unknown record type")
	// ErrLogFailed reports that an append to the metadata log failed. It is
	// sticky: the controller refuses further writes until restart, because
	// after a failed write or fsync the log's state on disk is unknown.
	ErrLogFailed = errors.New("controller: metadata log failed")
	// ErrBatchTooLarge reports an Append larger than one batch may be; it
	// is refused before anything is written.
	ErrBatchTooLarge = errors.New("controller: metadata batch too large")
	// ErrClosed reports use of a closed log.
	ErrClosed = errors.New("controller: metadata log closed")
	// ErrInvalidBroker reports a broker registration with a bad id, host or port.
	ErrInvalidBroker = errors.New("controller: invalid broker registration")
	// ErrOptions reports missing or invalid Options.
	ErrOptions = errors.New("controller: invalid options")
)

var (
	// ErrStale reports a batch decided against an image that is no longer
	// the newest: the active controller changed between decision and commit.
	ErrStale = errors.New("controller: batch decided against a stale image")
	// ErrNotController reports a write on a node that is not the active
	// controller (Kafka's NOT_CONTROLLER); nothing was committed.
	ErrNotController = errors.New("controller: not the active controller")
)
