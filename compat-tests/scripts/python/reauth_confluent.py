"""reauth_confluent.py: confluent-kafka (librdkafka 2.x) over SASL_PLAINTEXT keeps producing and
consuming for longer than several sessions of a broker with connections.max.reauth.ms set (KIP-368);
librdkafka re-authenticates its connections in place. The Go test counts the re-authentications.

Usage: reauth_confluent.py BOOTSTRAP MECHANISM USER PASSWORD TOPIC SECONDS
"""
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, mech, user, password, topic, seconds = sys.argv[1:7]
conf = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": mech,
    "sasl.username": user,
    "sasl.password": password,
}
errors = []
prod = Producer(dict(conf, **{"error_cb": lambda e: errors.append(str(e))}))
cons = Consumer(dict(conf, **{"group.id": "reauth-" + topic, "enable.auto.commit": False,
                              "error_cb": lambda e: errors.append(str(e))}))
cons.assign([TopicPartition(topic, 0, 0)])
sent = read = 0
end = time.monotonic() + float(seconds)


def delivered(err, _msg):
    if err is not None:
        raise KafkaException(err)


def consume(timeout):
    global read
    msg = cons.poll(timeout)
    if msg is None:
        return
    if msg.error():
        raise KafkaException(msg.error())
    if msg.value().decode() != str(read):
        raise SystemExit("record %d is %r" % (read, msg.value()))
    read += 1


while time.monotonic() < end:
    prod.produce(topic, str(sent).encode(), on_delivery=delivered)
    if prod.flush(30) != 0:
        raise SystemExit("record %d not acknowledged within 30 s" % sent)
    sent += 1
    consume(0.1)
    time.sleep(0.05)  # pace the records: the run lasts a fixed time, it waits for no condition
deadline = time.monotonic() + 30
while read < sent and time.monotonic() < deadline:
    consume(0.5)
cons.close()
print("produced %d, read %d over %s s; client errors: %s" % (sent, read, seconds, errors))
if read != sent or sent == 0 or errors:
    raise SystemExit("read %d of %d records, client errors %s" % (read, sent, errors))
