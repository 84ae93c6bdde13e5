"""The sandbox's AWS side: moto in server mode with version-pinned corrections (see moto_patches.py)."""

from .sim import AwsSim

__all__ = ["AwsSim"]
