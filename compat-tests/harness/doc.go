// Package harness builds the samsa binary and runs it as a child process on a free
// local port with its own data directory, so that compatibility tests can drive it
// with unmodified Kafka clients, kill it, and restart it over the same data.
package harness
