"""The runner: baseline, then propose -> commit -> measure -> decide -> record.

Each step leaves git in a state the next start can finish from: the attempt
ref exists before the branch moves, the note before the keep commit, the keep
commit before the best ref moves. ``Runner.resume`` completes whatever a
killed runner left half done, so state never lives anywhere but in git.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from kernelopt import ledger
from kernelopt.decide import (
    BASELINE,
    DIVERGED,
    FAILED,
    INCORRECT,
    INTERRUPTED,
    KEEP,
    REGRESSION,
    TIE,
    Spread,
    assess_deterministic,
    assess_paired,
    combine_classes,
    log_gain,
    spread_of,
    update_counters,
)
from kernelopt.decide import (
    gain as relative_gain,
)
from kernelopt.executor import Device, Executor, HostFault, InProcess, NoIdleDeviceError
from kernelopt.history import (
    LEDGER,
    AttemptRecord,
    HistoryError,
    RunRepo,
    RunState,
    read_trailers,
)
from kernelopt.measurement import Measurement
from kernelopt.program import Program
from kernelopt.proposers.base import Candidate, Observation, Proposer, ProposerState
from kernelopt.targets.command import run_local


class Target(Protocol):
    """How a tree is measured. ``deterministic`` targets are measured once per side."""

    deterministic: bool
    device: str

    def measure(self, tree: Path) -> Measurement: ...


@dataclass(frozen=True)
class Pending:
    """An attempt that is committed and waits for its measurement and verdict."""

    n: int
    sha: str
    kind: str
    hypothesis: str
    knobs: dict[str, Any] | None = None
    signature: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Named:
    """A name standing in for a host in HostPool slots (the device knows its host)."""

    name: str


@dataclass(frozen=True)
class Judgement:
    """A verdict (None: measure more) with the gains behind it."""

    verdict: str | None
    gain: float | None = None
    classes: dict[str, float] = field(default_factory=dict)
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()
    spread: Spread | None = None


def _candidate_trailers(candidate: Candidate) -> dict[str, str]:
    """What a proposer knows about a candidate, kept in its commit for resuming."""
    trailers = {}
    if candidate.signature:
        trailers["Kernelopt-Signature"] = candidate.signature
    if candidate.knobs is not None:
        trailers["Kernelopt-Knobs"] = json.dumps(
            candidate.knobs, sort_keys=True, separators=(",", ":"), default=str
        )
    return trailers


def _classes(m: Measurement) -> dict[str, float]:
    return dict(m.extra.get("classes") or {})


class RunBusy(RuntimeError):
    """Another kernelopt process holds this run."""


class RunStopped(RuntimeError):
    """The run already stopped; its reason is the message."""


@dataclass(frozen=True)
class AttemptResult:
    attempt: int
    commit: str
    kind: str
    hypothesis: str
    verdict: str
    metric: float | None
    best_metric: float | None
    previous_best: float | None
    gain: float | None
    consecutive_regressions: int
    recent_regressions: int
    stop: bool
    stop_reason: str | None = None
    error: str = ""
    classes: dict[str, float] = field(default_factory=dict)
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()
    samples: int = 1
    reused_from: int | None = None
    files: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "commit": self.commit,
            "kind": self.kind,
            "hypothesis": self.hypothesis,
            "verdict": self.verdict,
            "metric": self.metric,
            "best_metric": self.best_metric,
            "previous_best": self.previous_best,
            "gain": self.gain,
            "consecutive_regressions": self.consecutive_regressions,
            "recent_regressions": self.recent_regressions,
            "stop": self.stop,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "classes": self.classes,
            "improved": list(self.improved),
            "regressed": list(self.regressed),
            "samples": self.samples,
            "reused_from": self.reused_from,
            "files": list(self.files),
        }


class Reporter(Protocol):
    def event(self, name: str, **data: Any) -> None: ...


class SilentReporter:
    def event(self, name: str, **data: Any) -> None:
        pass


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def metric_of(m: Measurement, key: str) -> float | None:
    for source in (m.metrics, m.profile):
        value = source.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


class Runner:
    """Drives one run of one program in its own branch and worktree."""

    def __init__(
        self,
        program: Program,
        repo_root: Path,
        target: Target,
        *,
        tag: str,
        worktree: Path | None = None,
        reporter: Reporter | None = None,
        remeasure: bool = False,
        executor: Executor | None = None,
    ):
        self.program = program
        self.target = target
        self.run_id = f"{program.name}-{tag}"
        self.repo = RunRepo(repo_root, self.run_id, worktree)
        self.reporter = reporter or SilentReporter()
        self.remeasure = remeasure
        self.executor: Executor = executor or InProcess(getattr(target, "device", "local"))
        self.state: RunState | None = None
        self._lock_fd: int | None = None
        self._observations: dict[tuple[int, str], Observation] = {}

    # -- locking -----------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One kernelopt process per run at a time (flock; released if we die)."""
        lock_dir = self.repo.common_dir / "kernelopt" / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        path = lock_dir / f"{self.run_id}.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip()
            os.close(fd)
            raise RunBusy(
                f"run {self.run_id} is in use by another kernelopt process (pid {holder or '?'})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- setup and resume ---------------------------------------------------------

    def open(self, *, agent_mode: bool = False) -> RunState:
        """Attach the worktree and finish whatever a killed runner left half done."""
        self.repo.ensure_worktree()
        state = self.repo.load_state()
        if state.started:
            self._finish_last(state, agent_mode=agent_mode)
            state = self.repo.load_state()
        self.state = state
        last = state.attempts[-1] if state.attempts else None
        if state.stop is None and last is not None and last.note.get("stop_reason"):
            # Killed while recording a stop its last attempt decided: record it now,
            # rather than measuring candidates past the limit.
            self.record_stop(str(last.note["stop_reason"]))
        assert self.state is not None
        return self.state

    def _finish_last(self, state: RunState, *, agent_mode: bool) -> None:
        best_ref = state.best_commit
        assert best_ref is not None
        last = state.attempts[-1] if state.attempts else None
        if (
            last is not None
            and last.verdict in (KEEP, BASELINE)
            and not self._kept_after(last, best_ref)
        ):
            # Killed between the note and the keep commit: redo the keep commit.
            self.repo.reset_to(last.commit)
            self._commit_keep(last.attempt, last.commit, last.note)
            return
        if not agent_mode and (self.repo.head() != best_ref or self.repo.is_dirty()):
            self.repo.reset_to(best_ref)

    def _kept_after(self, record: Any, best_ref: str) -> bool:
        parent = self.repo.git("rev-parse", f"{best_ref}^", check=False).strip()
        if parent == record.commit:
            return True
        # A later ledger commit (a stop summary) may sit on top of the keep commit.
        return self.repo.git.ok("merge-base", "--is-ancestor", record.commit, best_ref) and (
            record.commit != best_ref
        )

    # -- the baseline ---------------------------------------------------------

    def ensure_baseline(self) -> AttemptResult | None:
        """Measure the unmodified code unless a baseline is recorded already.

        A baseline that failed stays in the history; the next start measures
        a new baseline attempt (the fix usually being a change to the program
        or the machine, not to the code).
        """
        assert self.state is not None
        if self.state.started:
            return None
        hypothesis = "measure the unmodified code"
        if self.state.pending:
            n, sha = self.state.pending[0]
            self.repo.reset_to(sha)
        else:
            n = self.state.next_attempt
            if self.state.attempts:
                # Every earlier baseline failed: start again from the user's
                # current HEAD, where the fix most likely is.
                self.repo.reset_to(self.repo.git("rev-parse", "HEAD").strip())
            sha = self.repo.commit_attempt(n, BASELINE, hypothesis, allow_empty=True)
            assert sha is not None
        return self._evaluate(Pending(n, sha, BASELINE, hypothesis))

    # -- one candidate --------------------------------------------------------

    def try_worktree(
        self, hypothesis: str, kind: str = "edit", extra: dict[str, Any] | None = None
    ) -> AttemptResult:
        """The agent's verb: the worktree's uncommitted change as one candidate."""
        state = self._require_state()
        self._record_pending_as_interrupted(state)
        state = self.state
        assert state is not None and state.best_commit is not None
        n = state.next_attempt
        formatted = self._format()
        if formatted is not None:
            return self.record_failure(kind, hypothesis, formatted, extra)
        sha = self.repo.commit_attempt(n, kind, hypothesis, parent=state.best_commit)
        if sha is None:
            failure = Measurement.failure(FAILED, "no change: the worktree equals BEST_COMMIT")
            return self.record_failure(kind, hypothesis, failure, extra)
        return self._evaluate(Pending(n, sha, kind, hypothesis, extra=dict(extra or {})))

    def record_failure(
        self,
        kind: str,
        hypothesis: str,
        failure: Measurement,
        extra: dict[str, Any] | None = None,
    ) -> AttemptResult:
        """Record the worktree as a failed attempt without measuring it (kept reachable)."""
        state = self._require_state()
        assert state.best_commit is not None
        n = state.next_attempt
        sha = self.repo.commit_attempt(
            n, kind, hypothesis, allow_empty=True, parent=state.best_commit
        )
        assert sha is not None
        pending = Pending(n, sha, kind, hypothesis, extra=dict(extra or {}))
        return self._decide_and_record(pending, [(failure, None)])

    def try_candidate(self, candidate: Candidate) -> AttemptResult:
        """Write a proposer's candidate into the worktree, commit it, measure it."""
        committed = self._commit_candidate(candidate)
        return committed if isinstance(committed, AttemptResult) else self._evaluate(committed)

    def _commit_candidate(self, candidate: Candidate) -> Pending | AttemptResult:
        """Write, format and commit a candidate as the next attempt (a failed one if the formatter fails)."""
        state = self._require_state()
        assert state.best_commit is not None
        n = state.next_attempt
        self.repo.write_files(candidate.files)
        formatted = self._format()
        if formatted is not None:
            return self.record_failure(candidate.kind, candidate.hypothesis, formatted)
        sha = self.repo.commit_attempt(
            n,
            candidate.kind,
            candidate.hypothesis,
            allow_empty=True,
            parent=state.best_commit,
            trailers=_candidate_trailers(candidate),
        )
        assert sha is not None
        return Pending(
            n, sha, candidate.kind, candidate.hypothesis, candidate.knobs, candidate.signature
        )

    def _format(self) -> Measurement | None:
        """Run the program's formatter on the candidate before it is committed.

        The commit that is measured is then already formatted, so no second
        measurement after formatting is needed. A failing formatter is the
        attempt's failure (returned); None means formatted (or no formatter).
        """
        command = self.program.target.format
        if not command:
            return None
        outcome = run_local(command, self.repo.worktree, {}, self.program.timeout_s)
        if outcome.timed_out or outcome.returncode != 0:
            status = (
                "timed out" if outcome.timed_out else f"exited with status {outcome.returncode}"
            )
            tail = "\n".join(outcome.output.splitlines()[-20:])
            return Measurement.failure(
                FAILED, f"the formatter {status}: {command}\n{tail}".strip(), log_tail=tail
            )
        return None

    def try_batch(self, candidates: list[Candidate]) -> list[AttemptResult]:
        """Commit several candidates, measure them at once (one per device), decide in order.

        Each is judged against the BEST of the batch's start. Once one of
        them is kept, the later ones of a noisy target are judged again
        against the new BEST (their comparison no longer holds); a
        deterministic target's later ones are simply compared with it.
        """
        state = self._require_state()
        assert state.best_commit is not None
        best = state.best_commit
        committed: list[Pending | AttemptResult] = []
        trees: dict[int, Path] = {}
        root = self.repo.common_dir / "kernelopt" / "trees" / self.run_id
        for candidate in candidates:
            att = self._commit_candidate(candidate)
            committed.append(att)
            if isinstance(att, Pending):
                self.repo.reset_to(best)
                trees[att.n] = root / str(att.n)
                self.repo.export_tree(att.sha, trees[att.n])
                # Counted as pending so the next candidate takes the next number.
                self.state = replace(self.state, pending=(*self.state.pending, (att.n, att.sha)))  # type: ignore[arg-type]
        pending = [a for a in committed if isinstance(a, Pending)]
        try:
            samples = self._measure_many(pending, trees) if pending else {}
            results: list[AttemptResult] = []
            kept = False
            for att in committed:
                if isinstance(att, AttemptResult):
                    results.append(att)
                elif isinstance(samples[att.n], NoIdleDeviceError):
                    results.append(self._stop_without_device(att, str(samples[att.n])))
                elif kept and not self.target.deterministic:
                    results.append(self._evaluate(att, trees[att.n]))
                else:
                    self.reporter.event(
                        "measuring", attempt=att.n, kind=att.kind, hypothesis=att.hypothesis
                    )
                    results.append(self._decide_and_record(att, samples[att.n]))  # type: ignore[arg-type]
                kept = kept or results[-1].verdict == KEEP
                if results[-1].stop:
                    break
            return results
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def _measure_many(
        self, pending: list[Pending], trees: dict[int, Path]
    ) -> dict[int, list[tuple[Measurement, Measurement | None]] | NoIdleDeviceError]:
        from kernelopt.hosts.pool import HostPool

        self._best_tree()  # exported once, before the threads share it
        try:
            with self.executor.devices(len(pending)) as devices:
                pool = HostPool([(_Named(d.host_name + "/" + d.name), d) for d in devices])
                jobs = pool.map(
                    pending, lambda att, _host, dev: self._judge_on(dev, att, trees[att.n])
                )
        except NoIdleDeviceError as exc:
            return {att.n: exc for att in pending}
        out: dict[int, list[tuple[Measurement, Measurement | None]] | NoIdleDeviceError] = {}
        for att, job in zip(pending, jobs, strict=True):
            if job.value is not None:
                out[att.n] = job.value
            else:
                failure = Measurement.failure(FAILED, f"host fault (retried once): {job.error}")
                out[att.n] = [(failure, None)]
        return out

    def measure_pending(self) -> list[AttemptResult]:
        """Measure attempts that were committed but never decided (killed mid-measure)."""
        state = self._require_state()
        results = []
        for n, sha in state.pending:
            self.repo.reset_to(sha)
            results.append(self._evaluate(self._pending(n, sha)))
        return results

    def _record_pending_as_interrupted(self, state: RunState) -> None:
        for n, sha in state.pending:
            failure = Measurement.failure(INTERRUPTED, "the runner stopped before measuring it")
            self._decide_and_record(self._pending(n, sha), [(failure, None)], reset=False)

    def _pending(self, n: int, sha: str) -> Pending:
        """A committed, undecided attempt as its commit tells it, knobs included, so
        that a proposer sees it as tried after a resume and does not propose it again."""
        kind, hypothesis = self._read_commit(sha)
        trailers = read_trailers(self.repo.git("log", "-1", "--format=%B", sha))
        knobs = json.loads(trailers["Kernelopt-Knobs"]) if "Kernelopt-Knobs" in trailers else None
        return Pending(n, sha, kind, hypothesis, knobs, trailers.get("Kernelopt-Signature"))

    def _read_commit(self, sha: str) -> tuple[str, str]:
        body = self.repo.git("log", "-1", "--format=%B", sha)
        kind = "edit"
        for line in body.splitlines():
            if line.startswith("Kernelopt-Kind:"):
                kind = line.split(":", 1)[1].strip()
        subject = body.splitlines()[0] if body else ""
        hypothesis = subject.split(": ", 1)[1] if ": " in subject else subject
        return kind, hypothesis

    def _require_state(self) -> RunState:
        if self.state is None:
            self.open()
        assert self.state is not None
        if not self.state.started:
            raise HistoryError(
                f"run {self.run_id} has no baseline yet: start it with `kernelopt run`"
            )
        if self.state.stop:
            raise RunStopped(f"run {self.run_id} stopped: {self.state.stop.get('reason')}")
        return self.state

    # -- measuring and deciding --------------------------------------------------

    def _best_tree(self) -> Path:
        """BEST's tree, exported beside the worktree, for interleaved re-measurement."""
        assert self.state is not None and self.state.best_commit is not None
        dest = self.repo.common_dir / "kernelopt" / "best" / self.run_id
        marker = dest.parent / f"{self.run_id}.commit"
        best = self.state.best_commit
        if not (dest.exists() and marker.exists() and marker.read_text() == best):
            self.repo.export_tree(best, dest)
            marker.write_text(best)
        return dest

    def _evaluate(self, att: Pending, tree: Path | None = None) -> AttemptResult:
        """Measure one committed attempt on a device from the executor, then decide."""
        assert self.state is not None
        reused = self._reusable(att)
        self.reporter.event("measuring", attempt=att.n, kind=att.kind, hypothesis=att.hypothesis)
        if reused is not None:
            samples = [(Measurement.from_json(reused.measurement), None)]
            return self._decide_and_record(att, samples, reused_from=reused.attempt)
        started = time.monotonic()
        try:
            samples = self._judge_with_retry(att, tree or self.repo.worktree)
        except KeyboardInterrupt:
            failure = Measurement.failure(INTERRUPTED, "interrupted by the user (Ctrl-C)")
            self._decide_and_record(att, [(failure, None)])
            raise
        except NoIdleDeviceError as exc:
            return self._stop_without_device(att, str(exc))
        return self._decide_and_record(
            att, samples, timings={"measure_s": time.monotonic() - started}
        )

    def _reusable(self, att: Pending) -> AttemptRecord | None:
        """An earlier attempt with the same tree on the same device kind, if its result holds."""
        assert self.state is not None
        if self.remeasure or att.kind == BASELINE:
            return None
        key = self.repo.content_key(att.sha, getattr(self.target, "device", ""))
        earlier = self.state.by_content().get(key)
        if earlier is None:
            return None
        # A noisy result only holds against the BEST it was compared with.
        if self.target.deterministic or earlier.note.get("best_commit") == self.state.best_commit:
            return earlier
        return None

    def _judge_with_retry(
        self, att: Pending, tree: Path
    ) -> list[tuple[Measurement, Measurement | None]]:
        """Judge on one device; a host fault is retried once on another device."""
        for attempt in (1, 2):
            try:
                with self.executor.device() as device:
                    return self._judge_on(device, att, tree)
            except HostFault as exc:
                if attempt == 2:
                    failure = Measurement.failure(FAILED, f"host fault (retried once): {exc}")
                    return [(failure, None)]
                self.reporter.event("host_fault", attempt=att.n, error=str(exc))
        raise AssertionError("unreachable")

    def _judge_on(
        self, device: Device, att: Pending, tree: Path
    ) -> list[tuple[Measurement, Measurement | None]]:
        """The candidate's samples, paired with BEST's on the same device when noisy."""
        first = device.measure(self.target, tree)
        if att.kind == BASELINE or not first.ok or self.target.deterministic:
            return [(first, None)]
        return self._paired(device, tree, first)

    def _stop_without_device(self, att: Pending, reason: str) -> AttemptResult:
        """No idle device within device.max_wait: record the attempt, stop the run."""
        failure = Measurement.failure(FAILED, f"not measured: {reason}")
        result = self._decide_and_record(att, [(failure, None)])
        why = f"no idle device: {reason}"
        self.record_stop(why)
        return replace(result, stop=True, stop_reason=why)

    def _paired(
        self, device: Device, tree: Path, first: Measurement
    ) -> list[tuple[Measurement, Measurement | None]]:
        """Interleave candidate and BEST measurements until the rule decides."""
        assert self.state is not None
        best_tree = self._best_tree()
        samples: list[tuple[Measurement, Measurement | None]] = []
        cand = first
        while True:
            best = device.measure(self.target, best_tree)
            samples.append((cand, best))
            if not (cand.ok and best.ok) or self._judge_paired(samples).verdict is not None:
                return samples
            cand = device.measure(self.target, tree)
            if not cand.ok:
                samples.append((cand, None))
                return samples
            self.reporter.event("sample", count=len(samples) + 1)

    def _judge_paired(self, samples: list[tuple[Measurement, Measurement | None]]) -> Judgement:
        """The noise rule over interleaved pairs, overall and per config class."""
        assert self.state is not None
        cfg = self.program.decide
        key = self.program.metric_key
        better = self.program.better
        prior = self.state.spread
        measured = [(c, b) for c, b in samples if b is not None]
        pairs = [(metric_of(c, key), metric_of(b, key)) for c, b in measured]
        if any(c is None or b is None for c, b in pairs):
            return Judgement(FAILED)
        values = [(float(c), float(b)) for c, b in pairs]  # type: ignore[arg-type]
        overall = assess_paired(values, better, cfg.noise, cfg.confirm, cfg.max_samples, prior)
        names = set(_classes(measured[0][0])) if measured else set()
        for c, b in measured:
            names &= set(_classes(c)) & set(_classes(b))
        per_class = {
            k: assess_paired(
                [(_classes(c)[k], _classes(b)[k]) for c, b in measured],
                better,
                cfg.noise,
                cfg.confirm,
                cfg.max_samples,
                prior,
            )
            for k in sorted(names)
        }
        spread = spread_of([log_gain(c, b, better) for c, b in values])
        if not per_class:
            return Judgement(overall.verdict, overall.gain, spread=spread)
        judged = combine_classes(overall, per_class)
        if judged is None:
            return Judgement(None, overall.gain, spread=spread)
        # Recorded like the overall gain (and like a deterministic target's classes):
        # the plain relative change of the class means; the rule itself uses log ratios.
        class_gains = {
            k: relative_gain(
                sum(_classes(c)[k] for c, _ in measured) / len(measured),
                sum(_classes(b)[k] for _, b in measured) / len(measured),
                better,
            )
            for k in per_class
        }
        return Judgement(
            judged.verdict, overall.gain, class_gains, judged.improved, judged.regressed, spread
        )

    def _judge_deterministic(self, cand: Measurement, metric: float) -> Judgement:
        """One sample per side is the truth: compare with BEST's recorded numbers."""
        best = self.state.best if self.state else None
        assert best is not None and best.metric is not None
        cfg = self.program.decide
        better = self.program.better
        overall = assess_deterministic(metric, best.metric, better, cfg.noise)
        best_classes = (best.measurement.get("extra") or {}).get("classes") or {}
        per_class = {
            k: assess_deterministic(v, best_classes[k], better, cfg.noise)
            for k, v in _classes(cand).items()
            if k in best_classes
        }
        judged = combine_classes(overall, per_class) if per_class else None
        if judged is None:
            return Judgement(overall.verdict, overall.gain)
        return Judgement(
            judged.verdict, overall.gain, judged.gains, judged.improved, judged.regressed
        )

    def _decide_and_record(
        self,
        att: Pending,
        samples: list[tuple[Measurement, Measurement | None]],
        *,
        reused_from: int | None = None,
        timings: dict[str, float] | None = None,
        reset: bool = True,
    ) -> AttemptResult:
        assert self.state is not None
        n, sha, kind, hypothesis = att.n, att.sha, att.kind, att.hypothesis
        knobs, signature = att.knobs, att.signature
        cfg = self.program.decide
        key = self.program.metric_key
        state = self.state
        best_record = state.best
        previous_best = best_record.metric if best_record else None
        cand = samples[-1][0] if samples else Measurement.failure(FAILED, "not measured")
        cand_values = [metric_of(c, key) for c, _ in samples if c.ok]
        metric = (
            sum(v for v in cand_values if v is not None) / len(cand_values)
            if cand_values and all(v is not None for v in cand_values)
            else None
        )
        error = cand.error
        judgement = Judgement(None)
        failed_sample = next(
            (c for c, b in samples if not c.ok or (b is not None and not b.ok)), None
        )
        if failed_sample is not None:
            bad = (
                failed_sample
                if not failed_sample.ok
                else next(b for _, b in samples if b is not None and not b.ok)
            )
            if bad.status == INCORRECT:
                verdict = INCORRECT
            elif bad.status == INTERRUPTED:
                verdict = INTERRUPTED
            else:
                verdict = FAILED
            error = bad.error if bad is failed_sample else f"re-measuring BEST failed: {bad.error}"
            cand = bad if bad is failed_sample else cand
        elif metric is None:
            verdict = FAILED
            produced = ", ".join(sorted({*cand.metrics, *cand.profile})) or "nothing"
            error = f"the target did not produce the metric {key!r} (it produced: {produced})"
        elif kind == BASELINE:
            verdict = BASELINE
        elif reused_from is not None and not self.target.deterministic:
            reused = next(r for r in state.attempts if r.attempt == reused_from)
            verdict = reused.verdict
            judgement = Judgement(verdict, reused.note.get("gain"))
        elif self.target.deterministic or all(b is None for _, b in samples):
            judgement = self._judge_deterministic(cand, metric)
            verdict = judgement.verdict or TIE
        else:
            judgement = self._judge_paired(samples)
            verdict = judgement.verdict or TIE
        gain = judgement.gain
        if metric is not None and verdict != BASELINE and reused_from is None:
            # Shown and recorded as the plain relative change against BEST (the
            # mean of BEST's interleaved samples when it was re-measured); the
            # rule itself works on log ratios.
            best_values = [metric_of(b, key) for _, b in samples if b is not None and b.ok]
            reference = (
                sum(v for v in best_values if v is not None) / len(best_values)
                if best_values and all(v is not None for v in best_values)
                else previous_best
            )
            if reference is not None:
                gain = relative_gain(metric, reference, self.program.better)
        classes, improved, regressed = judgement.classes, judgement.improved, judgement.regressed
        spread = (
            {"var": judgement.spread.var, "df": judgement.spread.df} if judgement.spread else None
        )
        files = tuple(self.repo.files_of(sha, state.best_commit)) if state.best_commit else ()
        summary = {
            "attempt": n,
            "time": _now(),
            "hypothesis": hypothesis,
            "files": list(files),
            "best": previous_best,
            "candidate": metric,
            "gain": gain,
            "best_commit": state.best_commit,
            "commit": sha,
            "notes": "; ".join(f"{k} {v * 100:+.1f}%" for k, v in classes.items()),
        }
        outcome = update_counters(
            state.counters,
            verdict,
            max_consecutive=cfg.max_consecutive_regressions,
            window=cfg.recent_window,
            summary=summary,
        )
        new_best = metric if verdict in (KEEP, BASELINE) else previous_best
        note = {
            "kernelopt": 1,
            "run": self.run_id,
            "program": self._program_rel(),
            "attempt": n,
            "kind": kind,
            "hypothesis": hypothesis,
            "verdict": verdict,
            "metric_name": self.program.metric,
            "metric": metric,
            "best_metric": new_best,
            "previous_best": previous_best,
            "best_commit": state.best_commit,
            "gain": gain,
            "classes": classes,
            "improved": list(improved),
            "regressed": list(regressed),
            "counters": outcome.counters.to_json(),
            "stop_reason": outcome.stop_reason,
            "device": getattr(self.target, "device", ""),
            "deterministic": self.target.deterministic,
            "measurement": cand.to_json(),
            "samples": [
                {"candidate": metric_of(c, key), "best": metric_of(b, key) if b else None}
                for c, b in samples
            ],
            "spread": spread,
            "content_key": self.repo.content_key(sha, getattr(self.target, "device", "")),
            "reused_from": reused_from,
            "knobs": knobs,
            "signature": signature,
            "files": list(files),
            "error": error,
            "time": _now(),
        }
        note.update(att.extra)
        if verdict == BASELINE:
            note["reference"] = self._reference()
        if timings:
            note["timings"] = {"measure_s": round(timings.get("measure_s", 0.0), 4)}
        self.repo.write_note(sha, note)
        if verdict in (KEEP, BASELINE):
            self._commit_keep(n, sha, note)
        elif reset:
            self.repo.reset_to(state.best_commit or f"{sha}^")
        # Advance the state in memory: rebuilding it from every note per
        # candidate would make each attempt cost more as the history grows.
        self.state = RunState(
            self.run_id,
            self.repo.read_ref("best"),
            (*state.attempts, AttemptRecord(n, sha, note)),
            tuple(p for p in state.pending if p[0] != n),
            None,
        )
        if outcome.stop:
            self.record_stop(outcome.stop_reason or "stopped")
        result = AttemptResult(
            attempt=n,
            commit=sha,
            kind=kind,
            hypothesis=hypothesis,
            verdict=verdict,
            metric=metric,
            best_metric=new_best,
            previous_best=previous_best,
            gain=gain,
            consecutive_regressions=outcome.counters.consecutive_regressions,
            recent_regressions=len(outcome.counters.recent_regressions),
            stop=outcome.stop,
            stop_reason=outcome.stop_reason,
            error=error,
            classes=classes,
            improved=improved,
            regressed=regressed,
            samples=len(samples),
            reused_from=reused_from,
            files=files,
        )
        self.reporter.event("attempt", result=result)
        return result

    def _commit_keep(self, n: int, sha: str, note: Mapping[str, Any]) -> None:
        """Append the ledger row for a kept attempt and move BEST there."""
        if self.repo.head() != sha or self.repo.is_dirty():
            self.repo.reset_to(sha)  # the keep commit is the candidate's child
        # What measuring left in the worktree (a benchmark's result files) must
        # not ride along into the ledger commit or the next candidate's commit.
        self.repo.reset_to(sha)
        path = self.repo.worktree / LEDGER
        text = ""
        verdict = note["verdict"]
        if verdict == BASELINE:
            text += ledger.run_section(
                self.run_id,
                self._program_rel(),
                str(note.get("device")),
                str(note.get("time")),
            )
        gain = note.get("gain")
        classes = note.get("improved") or []
        row = ledger.LedgerRow(
            date=str(note.get("time", ""))[:10],
            commit=sha,
            status="baseline" if verdict == BASELINE else "keep",
            target=self._target_label(),
            config_class=", ".join(classes) if classes else "all",
            kernel=self._kernel_label(),
            metric=ledger.format_metric(
                self.program.metric, note.get("metric"), str(note.get("device"))
            ),
            change=ledger.format_change(gain),
            why=str(note.get("hypothesis", "")),
        )
        text += ledger.render_row(row)
        reference = note.get("reference")
        if verdict == BASELINE and reference:
            value = reference.get("metric")
            text += ledger.render_row(
                ledger.LedgerRow(
                    date=row.date,
                    commit=sha,
                    status="reference",
                    target=str(reference.get("what", "compiler baseline")),
                    config_class="all",
                    kernel=self._kernel_label(),
                    metric=ledger.format_metric(self.program.metric, value, str(note.get("device")))
                    if value is not None
                    else "n/a",
                    change=ledger.format_change(
                        relative_gain(note["metric"], value, self.program.better)
                        if value not in (None, 0) and note.get("metric") is not None
                        else None
                    ),
                    why=str(reference.get("why", "")),
                )
            )
        ledger.append(path, text)
        if verdict == BASELINE:
            subject = f"kernelopt: baseline {ledger.format_metric(self.program.metric, note.get('metric'), str(note.get('device')))}"
        else:
            subject = f"kernelopt: keep #{n} ({ledger.format_change(gain)} {self.program.metric}): {str(note.get('hypothesis', ''))[:80]}"
        body = (
            f"Attempt #{n} ({sha[:10]}) measured {self.program.metric} "
            f"{note.get('metric')} against {note.get('previous_best')} at BEST."
        )
        head = self.repo.commit_ledger(
            subject, body, {"Kernelopt-Run": self.run_id, "Kernelopt-Kept": str(n)}
        )
        self.repo.set_ref("best", head)

    def _reference(self) -> dict[str, Any] | None:
        """The compiler's own result for the same math, measured once per run.

        Targets that can measure one provide ``reference(tree)``; where it
        cannot be measured the row says why instead of a number.
        """
        measure = getattr(self.target, "reference", None)
        if measure is None:
            return None
        m: Measurement = measure(self.repo.worktree)
        value = metric_of(m, self.program.metric_key) if m.ok else None
        return {
            "what": m.extra.get("what", "compiler baseline"),
            "metric": value,
            "why": m.extra.get("why", "") if m.ok else m.error,
            "measurement": m.to_json(),
        }

    def _program_rel(self) -> str:
        path = self.program.path.resolve()
        for base in (self.repo.root, self.repo.worktree):
            if base in path.parents:
                return str(path.relative_to(base))
        return str(path)

    def _target_label(self) -> str:
        t = self.program.target
        return t.command or t.kernel or t.kind

    def _kernel_label(self) -> str:
        t = self.program.target
        if t.kernel:
            return Path(t.kernel).parent.name or Path(t.kernel).stem
        return self.program.name

    def record_stop(self, reason: str) -> None:
        """Append the Stop Summary to performance.md and mark the run stopped."""
        state = self.repo.load_state()
        best = state.best
        best_metrics: dict[str, Any] = {self.program.metric: best.metric if best else None}
        if state.baseline and best:
            best_metrics["baseline"] = state.baseline.metric
        text = ledger.render_stop_summary(
            self.run_id,
            _now(),
            reason,
            state.best_commit or "",
            best_metrics,
            list(state.counters.recent_regressions),
        )
        ledger.append(self.repo.worktree / LEDGER, text)
        head = self.repo.commit_ledger(
            f"kernelopt: stop {self.run_id}: {reason}",
            "",
            {"Kernelopt-Run": self.run_id, "Kernelopt-Stop": reason},
        )
        self.repo.write_note(head, {"kernelopt": 1, "stop": True, "reason": reason, "time": _now()})
        self.repo.set_ref("stop", head)
        self.repo.set_ref("best", head)
        self.state = self.repo.load_state()

    # -- the loop ---------------------------------------------------------------

    def proposer_state(self) -> ProposerState:
        state = self._require_state()
        best = state.best
        history = tuple(self._observed(r) for r in state.attempts)
        tried = frozenset(o.signature for o in history if o.signature)
        return ProposerState(
            best_metric=best.metric if best else None,
            best_knobs=best.note.get("knobs") if best else None,
            better=self.program.better,
            history=history,
            tried=tried,
            seed=self.program.seed,
        )

    def _observed(self, record: AttemptRecord) -> Observation:
        """An attempt as proposers see it, built once per attempt: the run loop asks
        for the whole history before every batch, and records never change."""
        key = (record.attempt, record.commit)
        seen = self._observations.get(key)
        if seen is None:
            seen = Observation(
                attempt=record.attempt,
                kind=record.kind,
                verdict=record.verdict,
                metric=record.metric,
                knobs=record.note.get("knobs"),
                signature=record.note.get("signature"),
                profile=dict(record.measurement.get("profile") or {}),
            )
            self._observations[key] = seen
        return seen

    def stop_reason(
        self, started_at: float, invocation_count: int, max_candidates: int | None
    ) -> str | None:
        state = self.state
        assert state is not None
        stop = self.program.stop
        best = state.best
        if stop.target is not None and best is not None and best.metric is not None:
            reached = (
                best.metric >= stop.target
                if self.program.better == "higher"
                else best.metric <= stop.target
            )
            if reached:
                return f"target reached: {self.program.metric} {best.metric:.4g} (target {stop.target:g})"
        attempts = state.counters.attempts
        if stop.max_candidates is not None and attempts >= stop.max_candidates:
            return f"candidate budget used: {attempts} of {stop.max_candidates}"
        if max_candidates is not None and invocation_count >= max_candidates:
            return f"--max-candidates {max_candidates} reached"
        if stop.max_hours is not None and state.baseline is not None:
            t0 = dt.datetime.fromisoformat(str(state.baseline.note.get("time")))
            hours = (dt.datetime.now(dt.UTC) - t0).total_seconds() / 3600
            if hours >= stop.max_hours:
                return f"time budget used: {hours:.2f} h of {stop.max_hours:g} h"
        return None

    def run(self, proposer: Proposer | None, max_candidates: int | None = None) -> RunSummary:
        """Baseline, then candidates until a stop condition; resumable at any point."""
        started = time.monotonic()
        self.open()
        assert self.state is not None
        if self.state.stop:
            return self.summary(f"already stopped: {self.state.stop.get('reason')}", stopped=True)
        baseline = self.ensure_baseline()
        if baseline is not None and baseline.verdict != BASELINE:
            return self.summary(
                f"the baseline could not be measured: {baseline.error}", failed=True
            )
        count = 0
        for result in self.measure_pending():
            count += 1
            if proposer is not None:
                proposer.observe([self._observation(result)])
            if result.stop:
                return self.summary(result.stop_reason or "stopped", stopped=True)
        if proposer is None:
            return self.summary(
                "no proposer: this program has no knob space (use `kernelopt try` or --agent)"
            )
        while True:
            reason = self.stop_reason(started, count, max_candidates)
            if reason:
                return self.summary(reason)
            state = replace(self.proposer_state(), batch_size=self.executor.slots)
            batch = proposer.propose(state)
            if not batch:
                return self.summary("the proposer has nothing left to try")
            fresh = [c for c in batch if not (c.signature and c.signature in state.tried)]
            budget = None if max_candidates is None else max_candidates - count
            if self.program.stop.max_candidates is not None:
                left = self.program.stop.max_candidates - self.state.counters.attempts
                budget = left if budget is None else min(budget, left)
            fresh = fresh[: max(budget, 1)] if budget is not None else fresh
            if len(fresh) > 1:
                results = self.try_batch(fresh)
            else:
                results = [self.try_candidate(c) for c in fresh]
            for candidate, result in zip(fresh, results, strict=False):
                count += 1
                proposer.observe([self._observation(result, candidate)])
                if result.stop:
                    return self.summary(result.stop_reason or "stopped", stopped=True)

    def _observation(
        self, result: AttemptResult, candidate: Candidate | None = None
    ) -> Observation:
        record = next(
            (r for r in (self.state.attempts if self.state else ()) if r.attempt == result.attempt),
            None,
        )
        return Observation(
            attempt=result.attempt,
            kind=result.kind,
            verdict=result.verdict,
            metric=result.metric,
            knobs=candidate.knobs if candidate else None,
            signature=candidate.signature if candidate else None,
            profile=dict(record.measurement.get("profile") or {}) if record else {},
        )

    def summary(self, reason: str, *, stopped: bool = False, failed: bool = False) -> RunSummary:
        state = self.repo.load_state()
        self.state = state
        best = state.best
        base = state.baseline
        return RunSummary(
            run_id=self.run_id,
            branch=self.repo.branch,
            worktree=str(self.repo.worktree),
            reason=reason,
            stopped=stopped or state.stop is not None,
            failed=failed,
            attempts=len([r for r in state.attempts if r.attempt > 0]),
            kept=len([r for r in state.attempts if r.verdict == KEEP]),
            regressions=len([r for r in state.attempts if r.verdict == REGRESSION]),
            best_commit=state.best_commit,
            best_metric=best.metric if best else None,
            baseline_metric=base.metric if base else None,
            metric=self.program.metric,
            better=self.program.better,
            diverged=len([r for r in state.attempts if r.verdict == DIVERGED]),
        )


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    branch: str
    worktree: str
    reason: str
    stopped: bool
    failed: bool
    attempts: int
    kept: int
    regressions: int
    best_commit: str | None
    best_metric: float | None
    baseline_metric: float | None
    metric: str
    better: str
    diverged: int = 0

    @property
    def improvement(self) -> float | None:
        if self.best_metric is None or self.baseline_metric in (None, 0):
            return None
        from kernelopt.decide import gain

        return gain(self.best_metric, self.baseline_metric, self.better)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "branch": self.branch,
            "worktree": self.worktree,
            "reason": self.reason,
            "stopped": self.stopped,
            "failed": self.failed,
            "attempts": self.attempts,
            "kept": self.kept,
            "regressions": self.regressions,
            "diverged": self.diverged,
            "best_commit": self.best_commit,
            "best_metric": self.best_metric,
            "baseline_metric": self.baseline_metric,
            "improvement": self.improvement,
            "metric": self.metric,
        }


__all__ = ["AttemptResult", "RunBusy", "RunStopped", "RunSummary", "Runner", "Target"]
