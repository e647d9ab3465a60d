// Package broker runs the Kafka listeners: it accepts connections, reads
// size-prefixed request frames, decodes them with package wire, dispatches
// them through the handler table of package handlers and writes responses
// back in request order.
//
// Each connection has one read goroutine, a dispatcher goroutine that
// starts its requests one at a time, in order, and one write goroutine
// that writes the responses in request order (pipeline.go). A handler
// about to wait on others (a long-poll Fetch, an acks=all Produce waiting
// for the ISR) detaches: the dispatcher role passes to a new goroutine and
// the next requests run meanwhile, so a long poll no longer holds up a
// Heartbeat or Produce behind it (Apache Kafka runs one request per
// connection at a time). Everything before the detach (appends, SASL
// steps) keeps request order. conn.afterResponse, called by the writer
// after each response, is where a quota throttle mutes the connection.
// Fetch responses with at most 32 KiB of records are copied into one
// pooled buffer and written at once. The reader reads through a 4 KiB
// read-ahead buffer (readahead.go), so a small request costs one read
// system call. A malformed,
// oversized or unknown request closes that connection with a log line and
// never affects other connections; so does a panic while handling it
// (logged with its stack and counted in Server.PanicCount).
//
// Fetch is zero-copy on plain TCP (sendfile.go): the handler answers a
// handlers.FileFetch whose record batches are pinned segment file ranges,
// the connection encodes the framing around them and the write goroutine
// sends the framing with write(2) and each range with sendfile(2), the
// socket corked (TCP_CORK) for the response; on any other net.Conn (TLS)
// the ranges go through one pooled 128 KiB buffer. Follower fetches are
// answered the same way (handlers/fetch_replica_files.go). A fetch holds framing in
// memory, not data; a range truncated under it closes the connection, as
// in Kafka. Produce bodies are read into pooled buffers that are reused
// once the handler returns (framepool.go); other requests' buffers are
// not, as their handlers may keep slices of them.
//
// Limits (see server.go and conn.go): socket.request.max.bytes is checked
// on the size prefix, bodies are read in chunks as their bytes arrive,
// queued.max.request.bytes bounds the request bytes in flight over all
// connections, connections.max.idle.ms closes silent connections,
// max.connections makes the accept loop wait, max.connections.per.ip
// (and its overrides) closes new connections over the limit,
// max.connection.creation.rate makes the accept loop wait, an ip entity's
// connection_creation_rate quota holds a new connection over it unread
// and closes it after its throttle time (quota_ip.go), and a
// connection runs no request while more than 4 MiB of its responses wait
// for the socket. Accept errors (EMFILE) back off from 5ms to 1s with a
// rate-limited log line. fdlimit.go raises RLIMIT_NOFILE and refuses
// partitions the open file limit cannot hold. fuzz_tcp_test.go drives a
// node with random and mutated requests of every key and version.
//
// Security (security.go): a listener mapped to SSL or SASL_SSL wraps each
// connection in a *tls.Conn (tls.go; keystores and truststores as PEM or
// PKCS#12, keystore.go) and takes the principal from the client
// certificate; a SASL_PLAINTEXT or SASL_SSL listener serves only
// ApiVersions and the SASL requests until the client authenticates with
// PLAIN or SCRAM-SHA-256/512 (sasl.go, scram.go; SCRAM credentials live in
// the metadata log), or with a delegation token through SCRAM's
// tokenauth=true extension (delegation_tokens.go: the credential derived
// from the token's HMAC; the connection becomes the token's owner).
// Connections to other brokers' TLS or SASL inter-broker
// listener are set up by peer_dial.go. The principal reaches handlers as
// handlers.Request.Principal; with authorizer.class.name set to Kafka's
// StandardAuthorizer, handlers.Serve authorizes every request with it
// against the ACLs of the metadata image (handlers/authz*.go, package
// acl), and a request forwarded to the active controller travels in an
// Envelope carrying it (envelope.go, handlers/58_envelope.go).
//
// Client quotas (quota_conn.go, quota_mutation.go, rules in broker/quota):
// each request's cost is recorded against the quotas of its principal
// and client id; a client over one gets throttle_time_ms and its
// connection runs no further request until the throttle has passed.
//
// Usage:
//
//	srv, err := broker.New(broker.Options{Deps: deps, Listeners: cfg.Listeners, MaxRequestBytes: cfg.SocketRequestMaxBytes, QueuedMaxRequestBytes: cfg.QueuedMaxRequestBytes})
//	...
//	go srv.Serve()
//	...
//	srv.Shutdown(ctx)
package broker
