"""Fake ``neuron-profile``, the profiler CLI of SDKs before Neuron Explorer.

Interfaces and sources (details in ``profiler.py``):

* ``capture`` / ``view --output-format summary-json`` / ``--version``: the
  Neuron Profiler user guide (aws-neuron/aws-neuron-sdk
  tools/neuron-sys-tools/neuron-profile-user-guide.rst) and
  tools/neuron-explorer/how-to-profile-workload.rst (``neuron-explorer
  capture`` replaces it with an identical interface; unsupported from 2.30).
* ``*_percent`` fields as fractions in [0, 1]: zhang677/AccelOpt
  ``profile_results.csv`` and awslabs/nki-autotune (which multiplies them by
  100 itself); not stated in the Neuron docs (unverified there).
"""

import sys

from kernelopt.testing.fake_trn2.tools.profiler import main

if __name__ == "__main__":
    sys.exit(main("neuron-profile", sys.argv[1:]))
