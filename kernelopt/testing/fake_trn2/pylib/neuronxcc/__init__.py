"""Fake neuronxcc package: only the NKI standalone compile entry point."""
