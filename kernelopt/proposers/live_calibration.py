"""Live calibration: a screened run refits the cost model to its own device measurements.

Every measured knob candidate of a screened run whose metric is MFU is a
calibration pair: the kernel screening sent to the device (traced once by
the simulator) and the MFU the device measured. Once there are enough pairs,
and again after every ``refit_every`` new ones, the named Trn2 parameters are
fitted to all pairs so far (`kernelopt.sim.calibrate.calibrate`, from the
program's calibration file or the simulator's defaults), and the estimates of
later pools use the fitted parameters.

A fit takes seconds on a small kernel and minutes on a large one (every
parameter set tried reschedules every pair's trace), so it runs in a thread
while the device measures: a refit that becomes due when a round is drawn is
applied when the next round is drawn, waiting for it if it has not finished.
Which pool used which parameters is therefore the same on every machine.

After each refit the figures go to ``<git dir>/kernelopt/calibration/<run>.live.json``
(replaced atomically), which `kernelopt status` and `kernelopt report` show;
a resumed run reads them back and rebuilds its pairs from the run's measured
attempts (`kernelopt.sim.calibrate.run_pairs`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.files import write_atomically
from kernelopt.proposers.base import KNOB, Observation
from kernelopt.sim.calibrate import MIN_PAIRS, Traced, calibrate, traced_text
from kernelopt.sim.calibration import params_with

KIND = "kernelopt-live-calibration"
LIVE_METRICS = ("mfu", "mfu_estimated_percent")  # the figure the fit compares
UNMEASURED = frozenset({"failed", "incorrect"})  # verdicts with no device figure to pair


def live_for(
    program: Any,
    root: Path,
    common_dir: Path,
    run_id: str,
    workload_text: str,
    base: dict[str, float],
) -> LiveCalibration | None:
    """The live refit a screened program asks for; None unless its metric is MFU (a time
    or another metric is not what the fit compares) and ``refit_every`` is above 0."""
    every = program.screen.refit_every
    if program.metric not in LIVE_METRICS or not every:
        return None
    from kernelopt.sim.calibrate import run_pairs

    tracer = Tracer(workload_text, program.target.func, tuple(program.device.neuron.compiler_args))
    return LiveCalibration(
        live_path(common_dir, run_id),
        tracer,
        base=base,
        every=every,
        measured_pairs=lambda: run_pairs(root, run_id),
    )


def live_path(common_dir: Path, run_id: str) -> Path:
    return Path(common_dir) / "kernelopt" / "calibration" / f"{run_id}.live.json"


def read_live(common_dir: Path, run_id: str) -> dict[str, Any] | None:
    """A run's live calibration figures, or None when it has none (or it cannot be read)."""
    return _read(live_path(common_dir, run_id))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kind") == KIND else None


def live_summary(figures: dict[str, Any]) -> str:
    """One line for people: how far the refitted model is from the device, on how much."""
    failed = f"; the last refit failed: {figures['error']}" if figures.get("error") else ""
    if "error_after" not in figures:
        return f"sim vs device: no refit yet{failed}"
    rho = figures.get("spearman")
    rho_text = f"ρ {rho:.2f}" if isinstance(rho, int | float) else "ρ n/a"
    error = figures.get("error_after")
    error_text = f"error {error:.2f} pp" if isinstance(error, int | float) else "error n/a"
    return (
        f"sim vs device: {rho_text}, {error_text} over {figures.get('pairs')} measurements "
        f"(refit at attempt {figures.get('refit_at_attempt')}){failed}"
    )


def _outcome(future: Future[Any]) -> dict[str, Any] | None:
    """A finished refit's result; None when it was stopped."""
    return future.result() if future.done() and not future.cancelled() else None


class _Stopped(Exception):
    """The run closed while a refit was running."""


@dataclass(frozen=True)
class _Stoppable:
    """A pair whose estimates stop when the run closes (a fit asks for thousands)."""

    pair: Traced
    stop: threading.Event

    @property
    def measured(self) -> float:
        return self.pair.measured

    def mfu(self, params: Any) -> float:
        if self.stop.is_set():
            raise _Stopped
        return self.pair.mfu(params)


@dataclass(frozen=True)
class Tracer:
    """How a kernel text becomes a pair: the run's workload and compiler options."""

    workload_text: str
    func: str | None = None
    compiler_args: tuple[str, ...] = ()

    def __call__(self, attempt: int, measured: float, kernel_text: str) -> Traced | None:
        return traced_text(
            attempt, measured, kernel_text, self.workload_text, self.func, self.compiler_args
        )


class LiveCalibration:
    """The pairs of a screened run, refitted every ``every`` new ones, in a thread."""

    def __init__(
        self,
        path: Path,
        tracer: Callable[[int, float, str], Traced | None],
        *,
        base: dict[str, float] | None = None,
        every: int = 5,
        measured_pairs: Callable[[], Sequence[Traced]] = list,
    ) -> None:
        self.path = Path(path)
        self.tracer = tracer
        self.base = dict(base or {})
        self.every = every
        self.measured_pairs = measured_pairs  # the run's pairs so far, for a resumed run
        self.params = dict(self.base)  # what the estimates use now
        self.figures: dict[str, Any] | None = None
        self.pairs: dict[int, Traced] = {}  # by attempt
        self.sent: dict[str, str] = {}  # kernel text by knob signature
        self.refit_pairs = 0  # pairs the last refit started with
        self._stop = threading.Event()
        self._job: tuple[threading.Thread, Future[Any]] | None = None

    @property
    def busy(self) -> bool:
        """A refit is running: the next pool's parameters are not known yet."""
        return self._job is not None

    @property
    def refit_at(self) -> int | None:
        return self.figures.get("refit_at_attempt") if self.figures else None

    def restore(self) -> None:
        """The run's figures and parameters so far, and its measured attempts as pairs."""
        figures = _read(self.path)
        if figures is not None and figures.get("base", {}) == self.base:  # else: refit anew
            self.figures = figures
            self.params = {**self.base, **(figures.get("params") or {})}
            self.refit_pairs = int(figures.get("pairs") or 0)
        for pair in self.measured_pairs():
            self.pairs.setdefault(pair.attempt, pair)

    def remember(self, signature: str | None, kernel_text: str) -> None:
        """The kernel a chosen candidate sends to the device."""
        if signature:
            self.sent[signature] = kernel_text

    def observe(self, results: Sequence[Observation]) -> None:
        """Measured knob candidates screening sent become pairs."""
        for obs in results:
            kernel = self.sent.get(obs.signature or "")
            if (
                kernel is None
                or obs.kind != KNOB
                or obs.verdict in UNMEASURED
                or not isinstance(obs.metric, int | float)
                or obs.attempt in self.pairs
            ):
                continue
            pair = self.tracer(obs.attempt, float(obs.metric), kernel)
            if pair is not None:
                self.pairs[obs.attempt] = pair

    def before_round(self) -> dict[str, float]:
        """Apply a refit started last round (waiting for it), start one if due; the
        parameters this round's estimates use."""
        if self._job is not None:
            thread, future = self._job
            thread.join()
            self._job = None
            self._apply(_outcome(future))
        if len(self.pairs) >= MIN_PAIRS and len(self.pairs) - self.refit_pairs >= self.every:
            self._start()
        return self.params

    def close(self, wait: bool = False) -> None:
        """Finish (``wait``) or stop a running refit; a finished one is recorded."""
        if self._job is None:
            return
        thread, future = self._job
        if not wait:
            self._stop.set()
        thread.join()
        self._job = None
        self._apply(_outcome(future))

    def _start(self) -> None:
        pairs = [self.pairs[a] for a in sorted(self.pairs)]
        self.refit_pairs = len(pairs)
        future: Future[Any] = Future()
        thread = threading.Thread(
            target=self._refit, args=(pairs, future), name="kernelopt-refit", daemon=True
        )
        self._job = (thread, future)
        thread.start()

    def _refit(self, pairs: list[Traced], future: Future[Any]) -> None:
        stoppable = [_Stoppable(p, self._stop) for p in pairs]
        try:
            fitted, figures = calibrate(stoppable, params_with(self.base))  # type: ignore[arg-type]
        except _Stopped:
            future.cancel()
            return
        except Exception as exc:  # a fit that fails must not end the run: recorded instead
            future.set_result({"error": f"{type(exc).__name__}: {exc}", "pairs": len(pairs)})
            return
        future.set_result(
            {
                **figures,
                "params": {**self.base, **fitted},
                "refit_at_attempt": max(p.attempt for p in pairs),
            }
        )

    def _apply(self, result: dict[str, Any] | None) -> None:
        if result is None:
            return
        if "error" in result:
            figures = {**(self.figures or {}), "kind": KIND, "error": result["error"]}
        else:
            self.params = dict(result["params"])
            figures = {"kind": KIND, "base": self.base, **result}
        self.figures = figures
        write_atomically(self.path, json.dumps(figures, indent=1, sort_keys=True) + "\n")
