"""eks_sandbox: a local stand-in for an EKS cluster (see tests/sandbox/README.md)."""
