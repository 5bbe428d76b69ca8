"""Stand-ins for the Neuron SDK's Python modules (neuronxcc, nrtpy, nki).

This folder is put on PYTHONPATH only by `kernelopt fake-trn2 env`; nothing
imports it otherwise, so the fakes never shadow a real SDK by accident.
"""
