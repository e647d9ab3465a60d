"""docker.models.containers: the stand-in's Container (see docker/__init__.py)."""
from docker import Container  # noqa: F401  (conftest.py names the type)
