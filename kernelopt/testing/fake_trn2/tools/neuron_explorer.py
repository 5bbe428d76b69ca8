"""Fake neuron-explorer (the profiler's name in current SDKs): the CLI of profiler.py."""

import sys

from kernelopt.testing.fake_trn2.tools.profiler import main

if __name__ == "__main__":
    sys.exit(main("neuron-explorer", sys.argv[1:]))
