"""layout holds what both Python compatibility scripts share: the record layout and
the pass/fail bookkeeping.

Record i in [0, RECORDS) of topic PREFIX-<codec> goes to partition i % PARTITIONS with
key "key-<i>", value "<codec>-<i>-<filler>", header src=<client> and timestamp
BASE + i, so partition p holds records p, p+6, p+12, ... at offsets 0, 1, 2, ...
"""

import sys
import time

PARTITIONS = 6
RECORDS = 10000
FILLER = "samsa-compat-payload-" * 4


def key(i):
    return b"key-%d" % i


def value(codec, i):
    return ("%s-%d-%s" % (codec, i, FILLER)).encode()


def expected_before(p, n):
    """expected_before is how many records of partition p have index < n."""
    return (n - p + PARTITIONS - 1) // PARTITIONS if n > p else 0


def wait_for(fn, seconds):
    """wait_for polls fn until it returns true or the deadline passes."""
    deadline = time.monotonic() + seconds
    while True:
        if fn():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


class Checks:
    """Checks prints one line per check and remembers failures."""

    def __init__(self, name):
        self.name = name
        self.failures = 0

    def check(self, ok, what):
        if ok:
            print("ok   " + what, flush=True)
        else:
            self.failures += 1
            print("FAIL " + what, flush=True)
        return ok

    def note(self, what):
        print("     " + what, flush=True)

    def finish(self):
        if self.failures == 0:
            print("%s: all checks passed" % self.name, flush=True)
            sys.exit(0)
        print("%s: %d checks failed" % (self.name, self.failures), flush=True)
        sys.exit(1)


class Verifier:
    """Verifier checks records read back from one topic: content, partition, offset, order."""

    def __init__(self, codec, client):
        self.codec = codec
        self.client = client
        self.next = [0] * PARTITIONS  # next expected offset per partition
        self.bad = []

    def add(self, partition, offset, k, v, headers, timestamp, base):
        n = self.next[partition]
        i = partition + n * PARTITIONS
        want = (offset == n, k == key(i), v == value(self.codec, i),
                (headers or []) == [("src", self.client.encode())], timestamp == base + i)
        if not all(want) and len(self.bad) < 5:
            self.bad.append("p%d offset %d (want %d) key %r (want %r) value ok %s headers %r timestamp %r (want %d)"
                            % (partition, offset, n, k, key(i), want[2], headers, timestamp, base + i))
        self.next[partition] = n + 1
        return all(want)

    def complete(self):
        return all(self.next[p] >= expected_before(p, RECORDS) for p in range(PARTITIONS))
