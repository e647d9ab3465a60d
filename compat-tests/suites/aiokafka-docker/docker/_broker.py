"""_broker starts the stand-in's broker: samsa or Apache Kafka 4.4, as the aiolibs/kafka image's
docker/scripts/start-kafka.sh starts Kafka, moved to KRaft.

The image runs Kafka (2.8.1 in the suite's CI) with ZooKeeper: Kafka's config/server.properties
(broker.id 0, internal topics with replication factor 1, group.initial.rebalance.delay.ms=0)
plus start-kafka.sh's overrides, from the container's environment:
  - listeners PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL on ADVERTISED_*PORT, advertised on
    ADVERTISED_HOST (here: bound on that loopback address only);
  - num.partitions=NUM_PARTITIONS, auto.create.topics.enable=true, super.users=User:admin;
  - SSL: the JKS keystore and truststore of /ssl_cert (gen-ssl-certs.sh), ssl.client.auth=required,
    ssl.enabled.protocols=TLSv1.2,TLSv1.1,TLSv1, no endpoint identification, SSL between brokers;
  - SASL: sasl.enabled.mechanisms=SASL_MECHANISMS, the JAAS file docker/scripts/SASL_JAAS_FILE
    (PLAIN users admin, test, test2; the broker's own SCRAM login test/test), the ACL
    authorizer with allow.everyone.if.no.acl.found=true.
What differs here, the same for both brokers:
  - KRaft instead of ZooKeeper: one combined node (node.id 0) with a CONTROLLER listener on a free
    loopback port, and the StandardAuthorizer in place of SimpleAclAuthorizer. User:ANONYMOUS is a
    super user too: the broker reaches its controller over that PLAINTEXT listener as ANONYMOUS,
    which a cluster ACL of the suite (deny CREATE for test) would otherwise lock out. The
    suite's ACL checks run as the SASL users test and test2, never as ANONYMOUS.
  - no Kerberos: GSSAPI is dropped from the mechanisms and its login module from the JAAS file
    (no KDC here); the suite's GSSAPI tests fail on both brokers.
The ZooKeeper-era tools the tests run in the container (kafka-acls.sh --authorizer-properties
zookeeper.connect=..., kafka-configs.sh --zookeeper ...) become Kafka 4.4's tools with
--bootstrap-server, logged in as admin over SASL_PLAINTEXT.

Environment: SHIM_BROKER (samsa or kafka), SHIM_WORK (a directory for the broker's files),
SAMSA_REPO (the samsa checkout: kafka-ref.sh), SAMSA_BINARY (for samsa).
"""
import os
import random
import re
import signal
import socket
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def _free_port():
    # Below Linux's ephemeral range, so no outgoing connection takes it before the bind.
    for _ in range(200):
        p = random.randint(20000, 31999)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        return p
    raise RuntimeError("no free port")


def _jaas(src, dst):
    """_jaas copies the image's JAAS file without its Kerberos login module."""
    with open(src) as f:
        text = f.read()
    text = re.sub(r"\n\s*com\.sun\.security\.auth\.module\.Krb5LoginModule required[^;]*;", "", text)
    with open(dst, "w") as f:
        f.write(text)


class Server:
    def __init__(self, kind, work, env, ssl_dir):
        self.kind = kind
        self.work = work
        self.repo = os.environ["SAMSA_REPO"]
        self.ref = os.path.join(self.repo, "compat-tests", "kafka-ref", "kafka-ref.sh")
        host = env.get("ADVERTISED_HOST", "127.0.0.1")
        ports = {
            "PLAINTEXT": env["ADVERTISED_PORT"],
            "SSL": env.get("ADVERTISED_SSL_PORT"),
            "SASL_PLAINTEXT": env.get("ADVERTISED_SASL_PLAINTEXT_PORT"),
            "SASL_SSL": env.get("ADVERTISED_SASL_SSL_PORT"),
        }
        self.host, self.ports = host, ports
        cport = _free_port()
        names = [n for n in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL") if ports[n]]
        lines = [
            "process.roles=broker,controller",
            "node.id=0",
            "controller.listener.names=CONTROLLER",
            "controller.quorum.voters=0@127.0.0.1:%d" % cport,
            "listeners=" + ",".join("%s://%s:%s" % (n, host, ports[n]) for n in names)
            + ",CONTROLLER://127.0.0.1:%d" % cport,
            "advertised.listeners=" + ",".join("%s://%s:%s" % (n, host, ports[n]) for n in names),
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "log.dirs=%s/data" % work,
            # Kafka 2.8.1's config/server.properties (the image's), what matters of it.
            "num.partitions=1",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            # start-kafka.sh
            "num.partitions=%s" % env.get("NUM_PARTITIONS", 1),
            "auto.create.topics.enable=true",
            "super.users=User:admin;User:ANONYMOUS",
        ]
        if ports["SSL"]:
            lines += [
                "ssl.protocol=TLS",
                "ssl.enabled.protocols=TLSv1.2,TLSv1.1,TLSv1",
                "ssl.keystore.type=JKS",
                "ssl.keystore.location=%s/br_server.keystore.jks" % ssl_dir,
                "ssl.keystore.password=abcdefgh",
                "ssl.key.password=abcdefgh",
                "ssl.truststore.type=JKS",
                "ssl.truststore.location=%s/br_server.truststore.jks" % ssl_dir,
                "ssl.truststore.password=abcdefgh",
                "ssl.client.auth=required",
                "inter.broker.listener.name=SSL",
                "ssl.endpoint.identification.algorithm=",
            ]
        self.jaas = None
        if env.get("SASL_MECHANISMS"):
            mechs = [m for m in env["SASL_MECHANISMS"].split(",") if m != "GSSAPI"]
            lines += [
                "sasl.enabled.mechanisms=" + ",".join(mechs),
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "allow.everyone.if.no.acl.found=true",
            ]
            self.jaas = os.path.join(work, "kafka_server_jaas.conf")
            _jaas(os.path.join(os.environ["AIOKAFKA_SRC"], "docker", "scripts", env["SASL_JAAS_FILE"]), self.jaas)
        self.props = os.path.join(work, "server.properties")
        with open(self.props, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(work, "admin.properties"), "w") as f:
            f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                    "required username=\"admin\" password=\"admin\";\n")
        self.log = os.path.join(work, "broker.log")
        self.proc = None
        self._start()

    def _start(self):
        env = dict(os.environ)
        if self.jaas:
            env["KAFKA_OPTS"] = "-Djava.security.auth.login.config=" + self.jaas
        with open(self.log, "ab") as out:
            self._spawn(env, out)

    def _spawn(self, env, out):
        if self.kind == "samsa":
            cmd = [os.environ["SAMSA_BINARY"], "--config", self.props]
        else:
            fmt = subprocess.run([self.ref, "tool", "kafka-storage", "format", "-t", "Z-QFNngxRHWhFVsIQyjyUA",
                                  "-c", self.props], stdout=out, stderr=subprocess.STDOUT, check=False)
            if fmt.returncode != 0:
                raise RuntimeError("kafka-storage format failed; see " + self.log)
            log4j = os.path.join(self.work, "log4j2.properties")
            with open(log4j, "w") as f:
                f.write("status = warn\nappender.f.type = File\nappender.f.name = f\n"
                        "appender.f.fileName = %s\nappender.f.append = true\n"
                        "appender.f.layout.type = PatternLayout\n"
                        "appender.f.layout.pattern = [%%d] %%p %%m (%%c)%%n\n"
                        "rootLogger.level = INFO\nrootLogger.appenderRef.f.ref = f\n" % self.log)
            env["KAFKA_REF_LOG4J"] = log4j
            # kafka-server-start.sh's heap and kafka-run-class.sh's JVM flags, then KAFKA_OPTS.
            env["KAFKA_REF_TOOL_OPTS"] = ("-Xmx1G -Xms1G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 "
                                          "-XX:InitiatingHeapOccupancyPercent=35 "
                                          "-XX:+ExplicitGCInvokesConcurrent " + env.get("KAFKA_OPTS", ""))
            cmd = [self.ref, "run", "kafka.Kafka", self.props]
        self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def exec_run(self, args):
        """exec_run runs a command of the image: Kafka's tools or supervisorctl tail."""
        if args[:2] == ["supervisorctl", "tail"]:
            with open(self.log, "rb") as f:
                return 0, f.read()[-200000:]
        tool = os.path.basename(args[0])
        if not tool.endswith(".sh"):
            return 127, b"docker stand-in: unknown command " + " ".join(args).encode()
        rest, out = args[1:], []
        i = 0
        while i < len(rest):
            a = rest[i]
            if a == "--authorizer-properties" and rest[i + 1].startswith("zookeeper.connect="):
                i += 2
                continue
            if a == "--zookeeper":
                i += 2
                continue
            out.append(a)
            i += 1
        out += ["--bootstrap-server", "%s:%s" % (self.host, self.ports["SASL_PLAINTEXT"]),
                "--command-config", os.path.join(self.work, "admin.properties")]
        p = subprocess.run([self.ref, "tool", tool[:-3]] + out, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, check=False)
        return p.returncode, p.stdout


def start(image, env, ssl_dir):
    kind = os.environ.get("SHIM_BROKER", "samsa")
    work = os.environ["SHIM_WORK"]
    os.makedirs(work, exist_ok=True)
    return Server(kind, work, env, ssl_dir)
