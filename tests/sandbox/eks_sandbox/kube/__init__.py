"""The simulated Kubernetes API server and controllers of the sandbox."""

from .sim import KubeSim

__all__ = ["KubeSim"]
