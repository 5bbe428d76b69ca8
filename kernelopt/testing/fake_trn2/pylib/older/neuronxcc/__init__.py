"""Fake ``neuronxcc`` package (the compiler's Python package, installed with neuronx-cc in
every layout): ``neuronxcc.nki_standalone`` (the entry point the nki driver and public
tuning scripts call) and, up to SDK 2.27, the NKI Beta 1 namespace ``neuronxcc.nki``.

Sources: NKI release notes 2.27.0 ("Neuron 2.27 will be the last release to include
support for the neuronxcc.nki.* namespace"); the nki wheel's ``nki/compiler/driver.py``
(imports ``neuronxcc.nki_standalone``) for its presence beside the current nki.
"""

from kernelopt.testing.fake_trn2 import config

__version__ = str(config.current()["compiler_version"])
