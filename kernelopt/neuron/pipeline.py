"""Compile while measuring: every compile of a batch is queued at once on a
pool of CPU workers, and the device measures candidates in order as soon as
each one's compile is done.

So the device waits only for a compile that is running (or queued behind a
busy worker), never for one that could have started earlier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Built = TypeVar("Built")
Result = TypeVar("Result")


def compile_while_measuring(
    items: Sequence[Item],
    build: Callable[[Item], Built],
    measure: Callable[[Item, Built], Result],
    workers: int,
) -> list[Result]:
    """``measure(item, build(item))`` for each item, in order, builds in parallel.

    ``build`` and ``measure`` report failures as values; an exception from
    either still propagates (after the pool's queued builds are cancelled).
    """
    if workers < 1:
        raise ValueError(f"compile workers must be at least 1, got {workers}")
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        futures = [pool.submit(build, item) for item in items]
        try:
            return [
                measure(item, future.result()) for item, future in zip(items, futures, strict=True)
            ]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
