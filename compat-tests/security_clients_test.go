// This file runs the client libraries TestSecurityClients does not (Sarama,
// segmentio/kafka-go, confluent-kafka-go, KafkaJS and kafka-python) against one
// secured samsa process (startSecureBroker): each produces and consumes over
// SASL_SSL with SCRAM-SHA-512 and over mutual TLS, is refused with a wrong
// password, and cannot talk to the TLS listener without TLS.

package compattests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	kafkagosasl "github.com/segmentio/kafka-go/sasl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	franzsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// scramAdapter drives franz-go's SCRAM client (pkg/sasl/scram) through the
// SCRAM interfaces of Sarama (SCRAMClient) and kafka-go (sasl.Mechanism and
// StateMachine): neither library brings a SCRAM implementation of its own
// that this module already has (kafka-go's needs xdg-go/scram).
type scramAdapter struct {
	mech franzsasl.Mechanism
	sess franzsasl.Session
	done bool
}

// Begin implements sarama.SCRAMClient.
func (a *scramAdapter) Begin(user, password, _ string) error {
	a.mech = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	a.sess, a.done = nil, false
	return nil
}

// Step implements sarama.SCRAMClient: the first call ("") returns the
// client-first message.
func (a *scramAdapter) Step(challenge string) (string, error) {
	if a.sess == nil {
		sess, first, err := a.mech.Authenticate(context.Background(), "")
		a.sess = sess
		return string(first), err
	}
	done, out, err := a.sess.Challenge([]byte(challenge))
	a.done = done
	return string(out), err
}

// Done implements sarama.SCRAMClient.
func (a *scramAdapter) Done() bool { return a.done }

// kafkaGoScram is a kafka-go SCRAM-SHA-512 mechanism.
type kafkaGoScram struct{ user, pass string }

func (k kafkaGoScram) Name() string { return "SCRAM-SHA-512" }

func (k kafkaGoScram) Start(ctx context.Context) (kafkagosasl.StateMachine, []byte, error) {
	sess, first, err := scram.Auth{User: k.user, Pass: k.pass}.AsSha512Mechanism().Authenticate(ctx, "")
	return kafkaGoSession{sess}, first, err
}

type kafkaGoSession struct{ sess franzsasl.Session }

func (s kafkaGoSession) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	return s.sess.Challenge(challenge)
}

// TestSecurityMoreClients: Sarama, kafka-go, confluent-kafka-go, KafkaJS and
// kafka-python over SASL_SSL with SCRAM-SHA-512 and over mutual TLS.
func TestSecurityMoreClients(t *testing.T) {
	t.Parallel()
	s := startSecureBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_, adm := newAdmin(t, s.b.Addr)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res.Error())
	}
	var topics []string
	for _, c := range []string{"sarama", "kafkago", "confluentgo", "kafkajs", "kafkapython"} {
		topics = append(topics, "sec-"+c+"-scram", "sec-"+c+"-mtls")
	}
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil || r.Error() != nil {
		t.Fatalf("CreateTopics: %v %v", err, r.Error())
	}
	// Wait for the SCRAM credential to reach the image that SASL reads.
	waitScramUser(t, ctx, s, "bob", "bob-secret")

	t.Run("sarama", func(t *testing.T) { saramaSecurity(t, s) })
	t.Run("kafka-go", func(t *testing.T) { kafkaGoSecurity(t, ctx, s) })
	t.Run("confluent-kafka-go", func(t *testing.T) { confluentGoSecurity(t, ctx, s) })
	t.Run("kafkajs", func(t *testing.T) {
		node := lookTool(t, "node")
		if _, err := os.Stat("scripts/js/node_modules/kafkajs/package.json"); err != nil {
			missingClient(t, "KafkaJS is not installed (run npm ci in compat-tests/scripts/js): %v", err)
		}
		runScript(t, []string{"KAFKAJS_NO_PARTITIONER_WARNING=1"}, node, "scripts/js/security.js",
			s.saslAddr, s.sslAddr, s.b.Addr, s.caFile, s.certFile, s.keyFile, "sec-kafkajs")
	})
	t.Run("kafka-python", func(t *testing.T) {
		py := pythonWith(t, "kafka")
		runScript(t, []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"}, py, "scripts/python/security_kafka_python.py",
			s.saslAddr, s.sslAddr, s.b.Addr, s.caFile, s.certFile, s.keyFile, "sec-kafkapython")
	})
}

// waitScramUser polls until user can authenticate on the SASL_SSL listener
// (the credential is in the metadata image every listener reads).
func waitScramUser(t *testing.T, ctx context.Context, s *secureBroker, user, pass string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslAddr), kgo.DialTLSConfig(s.tlsConfig(false)),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.Ping(ctx)
		cl.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s cannot authenticate: %v", user, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// plainRefused checks that a TLS listener does not serve a client that
// speaks plaintext: an ApiVersions request gets no Kafka answer.
func plainRefusedBy(t *testing.T, addr string, try func() error) {
	t.Helper()
	if err := try(); err == nil {
		t.Fatalf("a plaintext client was served by the TLS listener %s", addr)
	} else {
		t.Logf("plaintext client to %s: %v", addr, err)
	}
}

func saramaSecurity(t *testing.T, s *secureBroker) {
	scramCfg := func(pass string) *sarama.Config {
		cfg := saramaConfig()
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = s.tlsConfig(false)
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User = "bob"
		cfg.Net.SASL.Password = pass
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramAdapter{} }
		cfg.Metadata.Retry.Max = 0
		return cfg
	}
	mtlsCfg := saramaConfig()
	mtlsCfg.Net.TLS.Enable = true
	mtlsCfg.Net.TLS.Config = s.tlsConfig(true)
	roundTrip := func(t *testing.T, addr, topic string, cfg *sarama.Config) {
		cl, err := sarama.NewClient([]string{addr}, cfg)
		if err != nil {
			t.Fatalf("sarama.NewClient: %v", err)
		}
		defer cl.Close()
		prod, err := sarama.NewSyncProducerFromClient(cl)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		for i := range 5 {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", topic, i))}); err != nil {
				t.Fatalf("sarama produce: %v", err)
			}
		}
		cons, err := sarama.NewConsumerFromClient(cl)
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		for i := range 5 {
			select {
			case m := <-pc.Messages():
				if want := fmt.Sprintf("%s-%d", topic, i); string(m.Value) != want {
					t.Fatalf("sarama consumed %q, want %q", m.Value, want)
				}
			case err := <-pc.Errors():
				t.Fatalf("sarama consume: %v", err)
			case <-time.After(time.Minute):
				t.Fatalf("sarama consumed %d of 5 records in a minute", i)
			}
		}
	}
	t.Run("SASL_SSL SCRAM-SHA-512", func(t *testing.T) { roundTrip(t, s.saslAddr, "sec-sarama-scram", scramCfg("bob-secret")) })
	t.Run("mTLS", func(t *testing.T) { roundTrip(t, s.sslAddr, "sec-sarama-mtls", mtlsCfg) })
	t.Run("wrong password", func(t *testing.T) {
		b := sarama.NewBroker(s.saslAddr)
		if err := b.Open(scramCfg("wrong")); err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		_, err := b.GetMetadata(&sarama.MetadataRequest{Version: 7})
		if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
			t.Fatalf("sarama with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("no TLS to the SSL listener", func(t *testing.T) {
		plainRefusedBy(t, s.sslAddr, func() error {
			cfg := saramaConfig()
			cfg.Net.DialTimeout, cfg.Net.ReadTimeout = 10*time.Second, 10*time.Second
			cfg.Metadata.Retry.Max = 0
			cl, err := sarama.NewClient([]string{s.sslAddr}, cfg)
			if err == nil {
				cl.Close()
			}
			return err
		})
	})
}

func kafkaGoSecurity(t *testing.T, ctx context.Context, s *secureBroker) {
	roundTrip := func(t *testing.T, addr, topic string, transport *kafkago.Transport, dialer *kafkago.Dialer) {
		w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: topic, RequiredAcks: kafkago.RequireAll, Transport: transport, BatchTimeout: 5 * time.Millisecond}
		defer w.Close()
		var msgs []kafkago.Message
		for i := range 5 {
			msgs = append(msgs, kafkago.Message{Value: fmt.Appendf(nil, "%s-%d", topic, i)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("kafka-go produce: %v", err)
		}
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, Dialer: dialer, MaxWait: 500 * time.Millisecond})
		defer r.Close()
		if err := r.SetOffset(0); err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		defer rcancel()
		for i := range 5 {
			m, err := r.ReadMessage(rctx)
			if err != nil {
				t.Fatalf("kafka-go consume after %d records: %v", i, err)
			}
			if want := fmt.Sprintf("%s-%d", topic, i); string(m.Value) != want {
				t.Fatalf("kafka-go consumed %q, want %q", m.Value, want)
			}
		}
	}
	mech := kafkaGoScram{"bob", "bob-secret"}
	t.Run("SASL_SSL SCRAM-SHA-512", func(t *testing.T) {
		roundTrip(t, s.saslAddr, "sec-kafkago-scram", &kafkago.Transport{TLS: s.tlsConfig(false), SASL: mech},
			&kafkago.Dialer{Timeout: 10 * time.Second, TLS: s.tlsConfig(false), SASLMechanism: mech})
	})
	t.Run("mTLS", func(t *testing.T) {
		roundTrip(t, s.sslAddr, "sec-kafkago-mtls", &kafkago.Transport{TLS: s.tlsConfig(true)},
			&kafkago.Dialer{Timeout: 10 * time.Second, TLS: s.tlsConfig(true)})
	})
	t.Run("wrong password", func(t *testing.T) {
		d := &kafkago.Dialer{Timeout: 10 * time.Second, TLS: s.tlsConfig(false), SASLMechanism: kafkaGoScram{"bob", "wrong"}}
		c, err := d.DialContext(ctx, "tcp", s.saslAddr)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, kafkago.SASLAuthenticationFailed) {
			t.Fatalf("kafka-go with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("no TLS to the SSL listener", func(t *testing.T) {
		plainRefusedBy(t, s.sslAddr, func() error {
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			defer dcancel()
			c, err := (&kafkago.Dialer{Timeout: 10 * time.Second}).DialContext(dctx, "tcp", s.sslAddr)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err = c.ApiVersions()
			return err
		})
	})
}

func confluentGoSecurity(t *testing.T, ctx context.Context, s *secureBroker) {
	scramConf := func(pass string) ckafka.ConfigMap {
		return ckafka.ConfigMap{"bootstrap.servers": s.saslAddr, "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
			"sasl.username": "bob", "sasl.password": pass, "ssl.ca.location": s.caFile}
	}
	mtlsConf := ckafka.ConfigMap{"bootstrap.servers": s.sslAddr, "security.protocol": "SSL", "ssl.ca.location": s.caFile,
		"ssl.certificate.location": s.certFile, "ssl.key.location": s.keyFile}
	roundTrip := func(t *testing.T, topic string, conf ckafka.ConfigMap) {
		pconf := ckafka.ConfigMap{"acks": "all"}
		for k, v := range conf {
			pconf[k] = v
		}
		p, err := ckafka.NewProducer(&pconf)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		deliveries := make(chan ckafka.Event, 5)
		for i := range 5 {
			if err := p.Produce(&ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: 0}, Value: fmt.Appendf(nil, "%s-%d", topic, i)}, deliveries); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			select {
			case e := <-deliveries:
				if m, ok := e.(*ckafka.Message); !ok || m.TopicPartition.Error != nil {
					t.Fatalf("confluent-kafka-go produce: %v", e)
				}
			case <-time.After(time.Minute):
				t.Fatal("confluent-kafka-go: records not delivered in a minute")
			}
		}
		cconf := ckafka.ConfigMap{"group.id": "sec-confluentgo-" + topic, "auto.offset.reset": "earliest"}
		for k, v := range conf {
			cconf[k] = v
		}
		c, err := ckafka.NewConsumer(&cconf)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Assign([]ckafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: ckafka.OffsetBeginning}}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; {
			m, err := c.ReadMessage(time.Minute)
			if err != nil {
				t.Fatalf("confluent-kafka-go consume after %d records: %v", i, err)
			}
			if want := fmt.Sprintf("%s-%d", topic, i); string(m.Value) != want {
				t.Fatalf("confluent-kafka-go consumed %q, want %q", m.Value, want)
			}
			i++
		}
	}
	t.Run("SASL_SSL SCRAM-SHA-512", func(t *testing.T) { roundTrip(t, "sec-confluentgo-scram", scramConf("bob-secret")) })
	t.Run("mTLS", func(t *testing.T) { roundTrip(t, "sec-confluentgo-mtls", mtlsConf) })
	t.Run("wrong password", func(t *testing.T) {
		// librdkafka reports a failed authentication as an error event
		// (ERR__AUTHENTICATION) carrying the broker's message.
		conf := scramConf("wrong")
		p, err := ckafka.NewProducer(&conf)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		timeout := time.After(time.Minute)
		for {
			select {
			case e := <-p.Events():
				ke, ok := e.(ckafka.Error)
				if !ok {
					continue
				}
				if ke.Code() == ckafka.ErrAuthentication && strings.Contains(ke.Error(), "Authentication failed") {
					return
				}
				t.Logf("confluent-kafka-go error event: %v", ke)
			case <-timeout:
				t.Fatal("confluent-kafka-go with a wrong password: no authentication error in a minute")
			}
		}
	})
	t.Run("no TLS to the SSL listener", func(t *testing.T) {
		plainRefusedBy(t, s.sslAddr, func() error {
			a, err := ckafka.NewAdminClient(&ckafka.ConfigMap{"bootstrap.servers": s.sslAddr})
			if err != nil {
				return err
			}
			defer a.Close()
			_, err = a.GetMetadata(nil, false, 10_000)
			return err
		})
	})
}
