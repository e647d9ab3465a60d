#!/usr/bin/env python3
"""oauth_kafka_python.py checks kafka-python's SASL/OAUTHBEARER against samsa.

    oauth_kafka_python.py BOOTSTRAP TOPIC GOOD_TOKEN EXPIRED_TOKEN

With GOOD_TOKEN (a JWT the broker accepts) it produces 10 records to TOPIC
(partition 0) and reads them back; EXPIRED_TOKEN must not be served.
kafka-python 2.0.2 sends the token as a bare frame after SaslHandshake v0 and
takes anything but an empty answer as a failure ("Unrecognized response during
authentication"): the broker's {"status":"invalid_token"} challenge is such an
answer. Exits non-zero on any failed check.
"""

import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.oauth.abstract import AbstractTokenProvider

bootstrap, topic, good, expired = sys.argv[1:5]
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


class Token(AbstractTokenProvider):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def token(self):
        return self.value


def conf(token):
    return dict(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                sasl_oauth_token_provider=Token(token))


p = KafkaProducer(acks="all", **conf(good))
want = [("oauth-py-%d" % i).encode() for i in range(10)]
for v in want:
    p.send(topic, value=v, partition=0)
p.flush(60)
p.close()
c = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=60000, **conf(good))
tp = TopicPartition(topic, 0)
c.assign([tp])
c.seek_to_beginning(tp)
got = []
for m in c:
    if m.value in want:
        got.append(m.value)
    if len(got) == len(want):
        break
c.close()
check(got == want, "OAUTHBEARER with a valid JWT: produce 10 records and consume them back")

try:
    bad = KafkaProducer(request_timeout_ms=10000, api_version_auto_timeout_ms=10000, max_block_ms=10000, **conf(expired))
    try:
        bad.partitions_for(topic)
    finally:
        bad.close(timeout=5)
    check(False, "an expired JWT is not served")
except KafkaError as e:
    print("     expired JWT: %r" % e)
    check(True, "an expired JWT is not served")

if failures:
    print("%d check(s) failed" % failures)
    sys.exit(1)
print("all checks passed")
