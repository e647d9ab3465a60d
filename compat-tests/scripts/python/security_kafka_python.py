#!/usr/bin/env python3
"""security_kafka_python.py checks kafka-python against samsa's secured listeners.

    security_kafka_python.py SASL_SSL_ADDR SSL_ADDR PLAINTEXT_ADDR CA_PEM CLIENT_CERT CLIENT_KEY TOPIC_PREFIX

Over SASL_SSL with SCRAM-SHA-512 (user bob, password bob-secret) and over mutual
TLS it produces 10 records to PREFIX-scram / PREFIX-mtls and reads them back by
partition; a wrong password must not connect, nor may a client without TLS to the
SSL listener. kafka-python 2.0.2 authenticates with SaslHandshake v0 and bare
tokens, where a failure can only close the connection (as Kafka does): it cannot
see SASL_AUTHENTICATION_FAILED, so the check is that no broker is available.
The topics exist (the Go test creates them). Exits non-zero on any failed check.
"""

import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

sasl_addr, ssl_addr, _plain_addr, ca, cert, key, prefix = sys.argv[1:8]
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


scram = dict(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
             sasl_plain_username="bob", sasl_plain_password="bob-secret", ssl_cafile=ca)
mtls = dict(security_protocol="SSL", ssl_cafile=ca, ssl_certfile=cert, ssl_keyfile=key)


def round_trip(addr, topic, conf):
    p = KafkaProducer(bootstrap_servers=addr, acks="all", **conf)
    want = [("%s-%d" % (topic, i)).encode() for i in range(10)]
    for v in want:
        p.send(topic, value=v, partition=0)
    p.flush(60)
    p.close()
    c = KafkaConsumer(bootstrap_servers=addr, enable_auto_commit=False, consumer_timeout_ms=60000, **conf)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    for m in c:
        got.append(m.value)
        if len(got) == len(want):
            break
    c.close()
    return got == want


check(round_trip(sasl_addr, prefix + "-scram", scram), "SASL_SSL SCRAM-SHA-512: produce 10 records and consume them back")
check(round_trip(ssl_addr, prefix + "-mtls", mtls), "mTLS: produce 10 records and consume them back")


def refused(addr, conf, what):
    try:
        p = KafkaProducer(bootstrap_servers=addr, request_timeout_ms=10000, api_version_auto_timeout_ms=10000,
                          max_block_ms=10000, **conf)
        try:
            p.partitions_for(prefix + "-scram")
        finally:
            p.close(timeout=5)
        check(False, what)
    except KafkaError as e:
        print("     %s: %r" % (what, e))
        check(True, what)


refused(sasl_addr, dict(scram, sasl_plain_password="wrong"), "a wrong password is refused")
# With api_version given the client does not probe versions at start: the
# metadata request must fail.
refused(ssl_addr, dict(api_version=(2, 5, 0)), "a client without TLS is not served by the SSL listener")

if failures:
    print("%d check(s) failed" % failures)
    sys.exit(1)
print("all checks passed")
