"""Fake ``nki`` namespace of SDK 2.27-2.29 (NKI Beta 2): ``nki.jit``, ``nki.language``,
``nki.isa`` for kernel modules.

Source: NKI release notes 2.27.0 (aws-neuron-sdk ``release-notes/prev/2.27.0/nki.rst``:
the ``nki.*`` namespace with ``@nki.jit`` introduced beside ``neuronxcc.nki.*``).
Whether this release's wheel has a compiler driver (``nki.compiler.driver``) that a
runner may call: unverified, so the fake offers none and kernels are compiled through
``neuronxcc.nki_standalone``.
"""

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.nki_stub import jit

from . import isa, language

__version__ = str(config.current()["nki_version"])
__all__ = ["isa", "jit", "language"]
