"""kernelopt: a git-native runner for autoresearch-style kernel tuning."""

__version__ = "0.1.0"
