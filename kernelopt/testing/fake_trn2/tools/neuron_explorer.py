"""Fake ``neuron-explorer``, the profiler CLI from Neuron 2.27 on.

Interfaces and sources (details in ``profiler.py``):

* ``capture`` (same interface as ``neuron-profile capture``, inputs as ``NAME
  file.npy`` pairs, zero bytes otherwise): aws-neuron/aws-neuron-sdk
  tools/neuron-explorer/how-to-profile-workload.rst.
* ``view --output-format summary-json``: the Summary table's fields and units
  (``*_percent`` in percent) from tools/neuron-explorer/profile-schema-reference.rst
  (schema 7.4.0, SDK 2.31); ``instance_type``, ``compiler_version`` and
  ``runtime_version`` are Metadata fields there, so the summary has none.
  That the JSON summary keeps the schema's units is unverified (the page warns
  the JSON output "may change between versions").
"""

import sys

from kernelopt.testing.fake_trn2.tools.profiler import main

if __name__ == "__main__":
    sys.exit(main("neuron-explorer", sys.argv[1:]))
