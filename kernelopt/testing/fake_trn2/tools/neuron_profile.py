"""Fake neuron-profile (older SDKs): the profiler CLI of profiler.py."""

import sys

from kernelopt.testing.fake_trn2.tools.profiler import main

if __name__ == "__main__":
    sys.exit(main("neuron-profile", sys.argv[1:]))
