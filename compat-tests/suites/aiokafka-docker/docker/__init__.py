"""A stand-in for the Docker SDK (docker-py) with the calls aiokafka's tests/conftest.py makes.

aiokafka.sh puts this directory first on PYTHONPATH, so the suite's unmodified conftest.py
imports it as `docker`. Instead of containers of the aiolibs/kafka image (Kafka with
ZooKeeper, a Kerberos KDC and supervisord, started by docker/scripts/start-kafka.sh), it runs:

  containers.run(image, command="sleep 300", volumes=..., working_dir=...)
      a "container" whose exec_run runs the command on this machine, with the volumes'
      container paths replaced by their host paths (the SSL certificates: gen-ssl-certs.sh);
  containers.run(image, environment=..., volumes=...)   (no command)
      one broker, samsa or Apache Kafka 4.4 (SHIM_BROKER), configured as start-kafka.sh
      configures the image's Kafka (_broker.py says how), on the ports of the environment;
      exec_run of the image's kafka-acls.sh / kafka-configs.sh runs Kafka 4.4's tool with
      --bootstrap-server (admin over SASL_PLAINTEXT) in place of the ZooKeeper options;
      exec_run(["supervisorctl", "tail", ...]) prints the broker's log;
      stop() stops the broker.
  images.pull(image)   does nothing.
"""
import shlex
import subprocess

from . import _broker

__all__ = ["from_env", "DockerClient", "Container"]


class Container:
    """Container is one run() of the stand-in: a command runner or a broker."""

    def __init__(self, volumes, working_dir, server=None):
        # container path -> host path
        self._binds = {v["bind"]: str(host) for host, v in (volumes or {}).items()}
        self._cwd = self._host_path(working_dir) if working_dir else None
        self._server = server

    def _host_path(self, p):
        for bind, host in self._binds.items():
            if p == bind:
                return host
            if p.startswith(bind.rstrip("/") + "/"):
                return host.rstrip("/") + p[len(bind.rstrip("/")):]
        return p

    def exec_run(self, cmd, user=None, **_kw):
        """exec_run returns (exit code, output bytes) as docker-py does."""
        args = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        if self._server is not None:
            return self._server.exec_run(args)
        args = [self._host_path(a) for a in args]
        p = subprocess.run(args, cwd=self._cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, check=False)
        return p.returncode, p.stdout

    def stop(self, **_kw):
        if self._server is not None:
            self._server.stop()


class _Containers:
    def run(self, image, command=None, volumes=None, working_dir=None,
            environment=None, **_kw):
        if command is not None:
            return Container(volumes, working_dir)
        c = Container(volumes, working_dir)
        ssl_dir = c._host_path("/ssl_cert")
        return Container(volumes, working_dir,
                         server=_broker.start(image, environment or {}, ssl_dir))


class _Images:
    def pull(self, image, **_kw):
        return None


class DockerClient:
    """DockerClient is what from_env returns."""

    def __init__(self):
        self.containers = _Containers()
        self.images = _Images()

    def close(self):
        pass


def from_env(**_kw):
    return DockerClient()


from . import models  # noqa: E402  (conftest.py names docker.models.containers.Container)
from .models import containers as _containers  # noqa: E402,F401
