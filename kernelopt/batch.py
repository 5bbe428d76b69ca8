"""Several candidates at once: committed, exported, measured one per device, decided in order.

After a keep, a noisy target's later candidates are measured again against
the new BEST; a deterministic target's stand as measured.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from kernelopt.decide import Verdict
from kernelopt.proposers.base import Candidate
from kernelopt.records import AttemptResult, Pending
from kernelopt.sampling import NoDevice

if TYPE_CHECKING:
    from kernelopt.loop import Runner


def try_batch(runner: Runner, candidates: list[Candidate]) -> list[AttemptResult]:
    """Commit ``candidates``, measure them at once (one per device), decide them in order."""
    root = runner.repo.common_dir / "kernelopt" / "trees" / runner.run_id
    committed = [runner._commit(c, export_to=root) for c in candidates]
    pending = [(a, root / str(a.n)) for a in committed if isinstance(a, Pending)]
    try:
        sampled = runner.evaluator.sample_many(runner._require_state(), pending)
        results: list[AttemptResult] = []
        for att in committed:
            kept = any(r.verdict == Verdict.KEEP for r in results)
            if isinstance(att, AttemptResult):
                results.append(att)
            elif (
                kept
                and not runner.target.deterministic
                and not isinstance(sampled[att.n], NoDevice)
            ):
                results.append(runner._evaluate(att, root / str(att.n)))
            else:
                runner.reporter.event(
                    "measuring", attempt=att.n, kind=att.kind, hypothesis=att.hypothesis
                )
                settled = runner.evaluator.settle(runner._require_state(), att, sampled[att.n])
                results.append(runner._settled(settled))
            if results[-1].stop:
                break
        return results
    finally:
        shutil.rmtree(root, ignore_errors=True)
