package broker

// NodeOptions are the hooks a process gives StartNodeWith; the zero value
// is StartNode's behaviour.
type NodeOptions struct {
	// OnAllLogDirsFailed is called once when every log directory of the
	// node has failed (storage.ManagerOptions.OnAllLogDirsFailed): a write,
	// fsync or roll error took a log in each offline. cmd/samsa halts the
	// process then, as Kafka's LogManager does, so that the controller
	// moves the node's leaderships after its session times out. nil keeps
	// the node running with its failed logs offline (in-process test nodes).
	OnAllLogDirsFailed func(dirs []string, err error)
	// Halt is called when a log directory failure among several ends the
	// node as Kafka's does (log_dir_failure.go): the metadata log
	// directory failed, or a failed directory could not be reported to
	// the active controller within log.dir.failure.timeout.ms. msg is
	// Kafka's log message. cmd/samsa logs it and exits with code 1; nil
	// keeps the node running (in-process test nodes).
	Halt func(msg string, err error)
}
