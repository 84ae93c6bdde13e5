"""The sandbox playing EKS for managed node groups: CreateNodegroup, the node-group API (answered instead of moto),
health reconciliation and the managed node update workflow (see service.py)."""

from .service import EksNodegroups

__all__ = ["EksNodegroups"]
