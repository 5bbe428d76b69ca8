"""The KernelIR's kernel in the NKI beta-1 API (``neuronxcc.nki``), for hosts whose SDK
predates the ``nki`` namespace (Neuron 2.22-2.27; ``neuronxcc.nki`` is gone from 2.28).

Same loops, same buffers, same instructions as the current rendering; only the API
differs. Beta-1 ISA calls return a new tile instead of writing ``dst``, so each call
becomes an assignment into the destination view (the compiler writes the result
there; no copy), and matmuls accumulate with ``+=`` into a PSUM tile that starts
from zero. Every call emitted, with the public beta-1 API reference it follows
(aws-neuron/aws-neuron-sdk ``general/nki/api/nki/isa/__init__.py``@2086a70 and
``general/nki/api/nki/language/__init__.py``@0521004):

- ``nl.zeros(shape, dtype, buffer=)``: an accumulator allocated zeroed (the
  current API's ``nl.ndarray`` + ``nisa.memset``);
- ``dst = nl.load(src)`` / ``nl.store(dst, value=src)``: the current ``dma_copy``;
- ``dst = nl.load_transpose2d(src)``: the current ``dma_transpose`` HBM -> SBUF;
- ``psum += nisa.nc_matmul(stationary=, moving=)``;
- ``dst = nisa.nc_transpose(data=)`` (TensorE, into PSUM);
- ``dst = nisa.tensor_copy(src=, dtype=)``, ``nisa.tensor_tensor(data1=, data2=, op=,
  dtype=)``, ``nisa.tensor_scalar(data=, op0=, operand0=, ..., dtype=, engine=)``,
  ``nisa.activation(op=, data=, bias=, scale=, dtype=)``, ``nisa.activation_reduce(op=,
  data=, reduce_op=, reduce_res=, bias=, dtype=)`` (an activation that sums its row;
  ``general/nki/api/generated/nki.isa.activation_reduce`` of the 2.21 docs), ``nisa.reciprocal(data=,
  dtype=)``, ``nisa.tensor_reduce(op=, data=, axis=, keepdims=, negate=, dtype=)``;
- engines by their beta-1 names (``nisa.scalar_engine``).

``dtype=`` is the destination's, so each instruction writes the type the current API's
``dst`` has.
"""

from __future__ import annotations

import re

from kernelopt.ir.layout import buffer_dtype
from kernelopt.ir.render import DTYPES, _Renderer
from kernelopt.ir.render_text import LINE

# The current API's engine enum (nisa.engine.scalar) by its beta-1 name (nisa.scalar_engine).
ENGINE = re.compile(r"nisa\.engine\.(\w+)")
# Beta-1 calls whose result tile takes ``dtype=`` (the destination's type).
TYPED = frozenset(
    {
        "tensor_copy",
        "tensor_tensor",
        "tensor_scalar",
        "activation",
        "activation_reduce",
        "reciprocal",
        "tensor_reduce",
    }
)


class Beta1Renderer(_Renderer):
    """``_Renderer`` with the beta-1 API's imports, zeroed allocations and calls."""

    HEADER = (
        "# NKI beta 1 (neuronxcc.nki) for Neuron SDKs before the nki namespace; the same",
        "# kernel as the nki rendering of these knobs. Re-render after editing knobs.json.",
        "import neuronxcc.nki.isa as nisa",
        "import neuronxcc.nki.language as nl",
        "from neuronxcc import nki",
    )
    ZEROS = "nl.zeros"
    PSUM_FIRST_WRITE_OVERWRITES = False  # beta 1 accumulates with +=: nl.zeros first

    def isa(self, indent: int, name: str, args: list[str]) -> None:
        dst, rest = _destination(args)
        if name == "memset":
            raise AssertionError("beta 1 allocates zeroed buffers with nl.zeros")
        if name == "dma_copy":
            src = rest[0].removeprefix("src=")
            if dst.split("[", 1)[0] == self.ir.output.name:
                self.w.call(indent, "nl.store", [dst, f"value={src}"])
            else:
                self._assign(indent, dst, "=", "nl.load", [src])
            return
        if name == "dma_transpose":
            self._assign(indent, dst, "=", "nl.load_transpose2d", [rest[0].removeprefix("src=")])
            return
        rest = [ENGINE.sub(r"nisa.\1_engine", a) for a in rest]
        if name in TYPED:
            buf = self.ir.buffer[dst.split("[", 1)[0]]
            rest.append(f"dtype={DTYPES[buffer_dtype(self.ir, buf)]}")
        assign = "+=" if name == "nc_matmul" else "="
        self._assign(indent, dst, assign, f"nisa.{name}", rest)

    def _assign(self, indent: int, target: str, op: str, call: str, args: list[str]) -> None:
        """``target op call(args)`` laid out as the formatter does: split inside the
        call's brackets, or, when even its first line is too long, the call in
        parentheses of its own."""
        head = f"{target} {op} {call}"
        if indent + len(head) + 1 <= LINE:
            self.w.call(indent, head, args)
            return
        self.w.line(indent, f"{target} {op} (")
        self.w.call(indent + 4, call, args)
        self.w.line(indent, ")")


def _destination(args: list[str]) -> tuple[str, list[str]]:
    """The ``dst=`` argument the current API's calls name first, and the others."""
    first, *rest = args
    if not first.startswith("dst="):
        raise AssertionError(f"expected the destination first, got {first!r}")
    return first.removeprefix("dst="), rest
