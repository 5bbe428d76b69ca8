"""The NKI fused Mamba tutorial's ladder on Trn1: three versions of one kernel, each with
measured device latency at several shapes.

Source: aws-neuron/aws-neuron-sdk nki/guides/tutorials/fused_mamba.rst @4373fac (the
tutorial is for Inf2/Trn1; its figures are neuron-profile device times). fp32, batch 1,
16 states. Version 1 (``nkibench_mamba.py``: states outer, 128-channel tiles inner)
takes 172.93 us at 256 channels x 512 positions and 2.34 ms at 4,096 channels;
version 2 (loops swapped, delta and u loaded once per channel tile) 1.61 ms at 4,096
channels; the tutorial's table then gives versions 2 and 3 (the sequence tiled by 512
inside each state) from 512 to 8,192 positions at 4,096 channels, one decimal of a
millisecond (version 2 spills SBUF at long sequences, 52.2 ms at 8,192; version 3 27.8
ms). Taken here: every shape of version 1, and versions 2 and 3 at 512, 2,048, 4,096 and
8,192 positions. The profile's VectorE figures are of a zoomed "core execution
period", not of the whole run, so they are not scored.
"""

from __future__ import annotations

from typing import Any

_TUTORIAL = "NKI fused Mamba tutorial (fused_mamba.rst @4373fac), Trn1, fp32, 16 states"
_SMALL = {"delta": (256, 512), "u": (256, 512), "a": (256, 4), "b": (4, 512), "c": (4, 512)}


def _shapes(channels: int, length: int) -> dict[str, tuple[int, int]]:
    return {
        "delta": (channels, length),
        "u": (channels, length),
        "a": (channels, 16),
        "b": (16, length),
        "c": (16, length),
    }


def _case(Case: Any, kernel: str, version: int, channels: int, length: int, ms: float) -> Any:
    return Case(
        kernel,
        "workload_nkibench_mamba.py",
        None,
        f"{_TUTORIAL}: mamba_v{version} at {channels} channels x {length} positions, {ms} ms",
        chip="trn1",
        family="mamba_ladder",
        measured_ms=ms,
        shapes=_shapes(channels, length),
        small=_SMALL,
        name=f"mamba_v{version}_c{channels}_s{length}",
    )


def cases(Case: Any) -> tuple[Any, ...]:
    """The ladder's cases, as ``Case`` (``case_types.Case``, which cases.py loads)."""
    return (
        _case(Case, "nkibench_mamba.py", 1, 256, 512, 0.17293),
        _case(Case, "nkibench_mamba.py", 1, 4096, 512, 2.34),
        _case(Case, "mamba_tutorial_v2.py", 2, 4096, 512, 1.61),
        *(
            _case(Case, "mamba_tutorial_v2.py", 2, 4096, n, ms)
            for n, ms in ((2048, 8.9), (4096, 17.6), (8192, 52.2))
        ),
        *(
            _case(Case, "mamba_tutorial_v3.py", 3, 4096, n, ms)
            for n, ms in ((512, 1.6), (2048, 6.6), (4096, 13.3), (8192, 27.8))
        ),
    )
