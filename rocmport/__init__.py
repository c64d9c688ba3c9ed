"""rocmport: port PyTorch and Triton code to AMD ROCm."""

__version__ = "0.1.0"
