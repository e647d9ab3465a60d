package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"log/slog"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/samsa-broker/samsa/config"
)

// Certificate reload and key-set refresh.
//
// A TLS listener's keystore and truststore files are watched: every
// securityReloadInterval the node's security loop fingerprints them
// (content hash), and when one changed it builds the listener's TLS again.
// New connections get the new certificate (the listener's tls.Config hands
// out the current one from GetConfigForClient); connections already open
// keep the session they negotiated. A change that does not load (a
// half-written file, a key that does not match its certificate) is logged
// and the previous certificate stays in use, as Kafka keeps its SSLFactory
// when a dynamic keystore update fails validation. Kafka itself re-reads
// the files only when told to (AlterConfigs of the listener's ssl.*
// settings); watching them lets a rotation by cert-manager or certbot take
// effect without that step.
//
// The same loop refreshes each OAUTHBEARER listener's JWKS when it is due.

// securityReloadInterval is how often the files are checked.
const securityReloadInterval = 2 * time.Second

// tlsReloader holds a listener's current server TLS configuration.
type tlsReloader struct {
	listener string
	settings *config.TLSSettings
	current  atomic.Pointer[tls.Config]
	// fingerprint of the files the current configuration was built from;
	// only the security loop reads and writes it after start.
	fingerprint []byte
}

func newTLSReloader(listener string, t *config.TLSSettings) (*tlsReloader, error) {
	r := &tlsReloader{listener: listener, settings: t}
	r.fingerprint = r.fingerprintFiles()
	tc, err := serverTLSConfig(listener, t)
	if err != nil {
		return nil, err
	}
	r.current.Store(tc)
	return r, nil
}

// config returns the tls.Config a listener serves with: each handshake
// takes the reloader's current configuration.
func (r *tlsReloader) config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current.Load(), nil },
	}
}

// files are the keystore and truststore files the listener reads.
func (r *tlsReloader) files() []string {
	var out []string
	if r.settings.KeystoreCertificateChain == "" && r.settings.KeystoreLocation != "" {
		out = append(out, r.settings.KeystoreLocation)
	}
	if r.settings.TruststoreCertificates == "" && r.settings.TruststoreLocation != "" {
		out = append(out, r.settings.TruststoreLocation)
	}
	sort.Strings(out)
	return out
}

// fingerprintFiles hashes the files' contents (a missing file hashes as
// its error, so that its reappearance is a change).
func (r *tlsReloader) fingerprintFiles() []byte {
	h := sha256.New()
	for _, f := range r.files() {
		data, err := os.ReadFile(f)
		h.Write([]byte(f))
		if err != nil {
			h.Write([]byte(err.Error()))
			continue
		}
		h.Write(data)
	}
	return h.Sum(nil)
}

// reload builds the TLS configuration again if the files changed. It
// reports whether a new certificate is in use.
func (r *tlsReloader) reload(logger *slog.Logger) bool {
	fp := r.fingerprintFiles()
	if bytes.Equal(fp, r.fingerprint) {
		return false
	}
	r.fingerprint = fp
	tc, err := serverTLSConfig(r.listener, r.settings)
	if err != nil {
		logger.Warn("keystore or truststore changed but does not load; keeping the previous certificate", "listener", r.listener, "err", err)
		return false
	}
	r.current.Store(tc)
	logger.Info("reloaded the listener's keystore and truststore", "listener", r.listener)
	return true
}

// runSecurityReload is the node's security loop: certificate reload and
// JWKS refresh, until ctx ends.
func runSecurityReload(ctx context.Context, logger *slog.Logger, security map[string]*ListenerSecurity) {
	var reloaders []*tlsReloader
	var keySets []*jwksKeys
	for _, sec := range security {
		if sec.reloader != nil {
			reloaders = append(reloaders, sec.reloader)
		}
		if sec.SASL != nil {
			if v, ok := sec.SASL.OAuth.(*jwtValidator); ok {
				keySets = append(keySets, v.set)
			}
		}
	}
	if len(reloaders) == 0 && len(keySets) == 0 {
		return
	}
	t := time.NewTicker(securityReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, r := range reloaders {
				r.reload(logger)
			}
			for _, k := range keySets {
				if err := k.refreshIfStale(now); err != nil {
					logger.Warn("OAUTHBEARER key set refresh failed; keeping the keys held", "err", err)
				}
			}
		}
	}
}
