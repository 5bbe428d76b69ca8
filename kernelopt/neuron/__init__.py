"""Measuring on Trainium2: the host-side driver, summary parsing, the compile
pipeline and the `device.kind: neuron` target (see docs/trn2.md)."""
