"""docker.models: the stand-in's module tree (see docker/__init__.py)."""
