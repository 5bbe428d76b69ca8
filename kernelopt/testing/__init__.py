"""Test doubles shipped with kernelopt, for dry runs on machines without hardware."""
