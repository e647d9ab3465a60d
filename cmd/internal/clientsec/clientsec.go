// Package clientsec turns Kafka client security properties (what the
// Kafka tools read from --command-config: security.protocol, sasl.*, ssl.*)
// into franz-go client options, for samsa's commands (cmd/samsa,
// cmd/samsa-load).
//
//	props, _ := config.ParseClientProperties(text)
//	opts, err := clientsec.Options(props)
//	cl, _ := kgo.NewClient(append(opts, kgo.SeedBrokers(addr))...)
//
// security.protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
// sasl.mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 with the username
// and password of sasl.jaas.config; for TLS the PEM trust and key material
// (ssl.truststore.location or ssl.truststore.certificates,
// ssl.keystore.location holding certificate and key, or
// ssl.keystore.certificate.chain with ssl.keystore.key). An empty
// ssl.endpoint.identification.algorithm turns host name checks off, as in
// Kafka; the chain is still verified.
package clientsec

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-broker/samsa/config"
)

// ErrInvalid marks client properties that cannot be used.
var ErrInvalid = errors.New("clientsec: invalid client properties")

// Options returns the client options of props.
func Options(props map[string]string) ([]kgo.Opt, error) {
	protocol := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch protocol {
	case "PLAINTEXT", "SASL_PLAINTEXT":
	case "SSL", "SASL_SSL":
		tc, err := tlsConfig(props)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	default:
		return nil, fmt.Errorf("%w: security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", ErrInvalid, protocol)
	}
	if strings.HasPrefix(protocol, "SASL_") {
		mech, err := sasl(props)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		opts = append(opts, mech)
	}
	return opts, nil
}

func sasl(props map[string]string) (kgo.Opt, error) {
	mechanism := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	if mechanism == "" {
		mechanism = "GSSAPI" // Kafka's default, which samsa does not serve
	}
	entries, err := config.ParseJAAS(props["sasl.jaas.config"])
	if err != nil || len(entries) == 0 {
		return nil, fmt.Errorf("sasl.jaas.config: want a login module with username and password (%v)", err)
	}
	user, pass := entries[0].Options["username"], entries[0].Options["password"]
	switch mechanism {
	case "PLAIN":
		return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), nil
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()), nil
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), nil
	}
	return nil, fmt.Errorf("sasl.mechanism %s: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
}

func tlsConfig(props map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	pemOf := func(inline, file string) ([]byte, error) {
		if v := strings.TrimSpace(props[inline]); v != "" {
			return []byte(v), nil
		}
		if f := strings.TrimSpace(props[file]); f != "" {
			return os.ReadFile(f)
		}
		return nil, nil
	}
	ca, err := pemOf("ssl.truststore.certificates", "ssl.truststore.location")
	if err != nil {
		return nil, err
	}
	if ca != nil {
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("truststore: no PEM certificate found (only PEM truststores are read here)")
		}
	}
	chain, err := pemOf("ssl.keystore.certificate.chain", "ssl.keystore.location")
	if err != nil {
		return nil, err
	}
	if chain != nil {
		key := chain // ssl.keystore.location: certificate and key in one PEM file
		if v := strings.TrimSpace(props["ssl.keystore.key"]); v != "" {
			key = []byte(v)
		}
		cert, err := tls.X509KeyPair(chain, key)
		if err != nil {
			return nil, fmt.Errorf("keystore: %v (only unencrypted PEM keystores are read here)", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if alg, ok := props["ssl.endpoint.identification.algorithm"]; ok && strings.TrimSpace(alg) == "" {
		// Chain verification without the host name check.
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return tc, nil
}
