"""The user's experience as the benchmark: each shipped nki program run as `kernelopt run` runs it.

Imported by `benchmarks/tuning.py --runs`. Every seed is a full run (baseline,
the program's stop rules, the decide rule, git notes) through `Session` on a
temporary copy of this repository, with only `search.seed` changed. On sim the
measurements are deterministic, so a seed changes only the proposer.

The best known state of a workload is the best of a large random enumeration
of fitting states (cached by the workload's, the IR's and the simulator's
source) and of every run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelopt.program import load_program
from kernelopt.session import Session

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(tempfile.gettempdir()) / "kernelopt-tuning-best-known.json"


def shipped_programs() -> list[Path]:
    """Every program under programs/ whose target is nki."""
    return [
        p for p in sorted((REPO / "programs").glob("*.md")) if load_program(p).target.kind == "nki"
    ]


def scratch_repo(where: Path) -> Path:
    """A committed copy of this checkout's tracked files (what a user would have cloned)."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, where / rel)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=where, check=True)
    subprocess.run([*git, "add", "-A"], cwd=where, check=True)
    subprocess.run([*git, "commit", "-qm", "shipped"], cwd=where, check=True)
    return where


def ending(reason: str) -> str:
    """How a run ended, in one word."""
    text = reason.lower()
    for key, word in (
        ("target", "target"),
        ("budget", "budget"),
        ("regression", "regressions"),
        ("nothing left", "exhausted"),
    ):
        if key in text:
            return word
    return reason


class MeasuredOnce:
    """Sim is deterministic: a kernel source measured once (in any run or invocation)
    is not simulated again. Cached on disk by the tree's kernel, workload and the
    simulator's source, so the runs' decisions are exactly what a fresh simulation
    would give.

    With ``trace_only`` a kernel is timed by the simulator without its array
    math (the same cost model, about five times faster) and the numerics check
    is left out: every run's best kernel is then checked in full at the end
    (``check_best``), so a wrong kernel cannot hide behind a figure.
    """

    def __init__(self, trace_only: bool = False) -> None:
        from kernelopt.targets.nki import NkiSimTarget

        self.original = _trace_only if trace_only else NkiSimTarget.measure
        self.path = Path(tempfile.gettempdir()) / "kernelopt-tuning-measured"
        self.path.mkdir(exist_ok=True)
        self.code = _code_digest() + ("-trace" if trace_only else "")
        cache = self

        def measure(target: Any, tree: Path, env: Any = None) -> Any:
            return cache.measure(target, Path(tree), env)

        NkiSimTarget.measure = measure  # type: ignore[method-assign]

    def measure(self, target: Any, tree: Path, env: Any) -> Any:
        from kernelopt.measurement import Measurement

        digest = hashlib.sha1(self.code.encode())
        for rel in (target.kernel, target.workload):
            digest.update((tree / rel).read_bytes())
        file = self.path / f"{digest.hexdigest()}.json"
        if file.exists():
            return Measurement.from_json(json.loads(file.read_text()))
        measured = self.original(target, tree, env)
        file.write_text(json.dumps(measured.to_json()))
        return measured


def _trace_only(target: Any, tree: Path, env: Any = None) -> Any:
    """The simulator's timing of ``tree``'s kernel, in this process, without array math."""
    from kernelopt.measurement import Measurement
    from kernelopt.sim import SimError, run_kernel
    from kernelopt.sim.check import SimReport
    from kernelopt.targets.nki import mac_count_of, roofline_work_of
    from kernelopt.workload import load_workload, make_inputs

    started = time.monotonic()
    workload = load_workload(tree / target.workload, require=("f_numpy", "INPUT_SPECS"))
    macs = mac_count_of(workload)
    inputs = make_inputs(workload.input_specs, 0)
    try:
        run = run_kernel(
            tree / target.kernel,
            inputs,
            func=target.func,
            compute=False,
            mac_count=macs,
            compiler_args=target.compiler_args,
        )
    except SimError as exc:
        return Measurement.failure("failed", str(exc), device=target.device)
    report = SimReport(
        True, None, None, run.profile, func=run.func, explanation=run.explain().to_json()
    )
    work = roofline_work_of(workload)
    return target.measurement_of(report, macs, time.monotonic() - started, work=work)


def check_best(repo: Path, run: dict[str, Any], program: Any) -> str:
    """The full simulator check (numerics included) of a run's best kernel."""
    from kernelopt.history import committed_text
    from kernelopt.sim import check_kernel
    from kernelopt.workload import load_workload

    if not run.get("best_commit"):
        return "baseline"
    with tempfile.TemporaryDirectory() as tmp:
        for rel in (program.target.kernel, program.target.workload):
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_text(committed_text(repo, run["best_commit"], rel) or "")
        workload = load_workload(Path(tmp) / program.target.workload)
        report = check_kernel(Path(tmp) / program.target.kernel, workload)
    return "correct" if report.correct else f"WRONG: {report.error}"


def _code_digest() -> str:
    digest = hashlib.sha1()
    for folder in ("kernelopt/sim", "kernelopt/ir", "kernelopt/targets"):
        for src in sorted((REPO / folder).rglob("*.py")):
            digest.update(src.read_bytes())
    return digest.hexdigest()[:16]


def one_run(repo: Path, program_path: Path, seed: int) -> dict[str, Any]:
    """Run ``program_path`` (in ``repo``) with ``search.seed = seed`` to its end; what the
    user would see."""
    program = dataclasses.replace(load_program(program_path), seed=seed)
    session = Session.create(program, tag=f"seed{seed}", worktree=str(repo.parent / f"wt-{seed}"))
    t0 = time.monotonic()
    summary = session.runner.run(session.proposer)
    state = session.runner.repo.load_state()
    verdicts = [a.verdict for a in state.attempts if a.verdict != "baseline"]
    best = state.best
    return {
        "seed": seed,
        "best": summary.best_metric,
        "candidates": len(verdicts),
        "reached_at": best.attempt if best is not None else None,
        "end": ending(summary.reason),
        "reason": summary.reason,
        "regressions": verdicts.count("regression"),
        "ties": verdicts.count("tie"),
        "baseline": summary.baseline_metric,
        "best_commit": best.commit if best is not None else None,
        "seconds": time.monotonic() - t0,
    }


def _cache_key(workload: Path, reference: int, metric: str = "mfu") -> str:
    digest = hashlib.sha1(workload.read_bytes()).hexdigest()[:16]
    return f"{workload.name}:{metric}:{reference}:{digest}:{_code_digest()}"


def best_known(workload: Path, reference: int, metric: str = "mfu") -> float:
    """Best sim ``metric`` of ``reference`` fitting random states (cached across invocations)."""
    from tuning import Scorer, random_search  # the enumeration the other mode uses

    from kernelopt.workload import load_workload

    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    key = _cache_key(workload, reference, metric)
    if key not in cache:
        loaded = load_workload(workload)
        scorer = Scorer(loaded, metric)
        curve = random_search(loaded, scorer, reference, 1_000_003, fit_only=True)
        cache[key] = curve[-1] if curve else 0.0
        CACHE.write_text(json.dumps(cache, indent=1))
    return float(cache[key])


def run_programs(
    seeds: list[int], reference: int, only: list[str] | None, trace_only: bool = False
) -> list[dict[str, Any]]:
    results = []
    MeasuredOnce(trace_only)
    for path in shipped_programs():
        if only and path.stem not in only:
            continue
        program = load_program(path)
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kernelopt-runs-") as tmp:
            repo = scratch_repo(Path(tmp) / "repo")
            runs = []
            for seed in seeds:
                runs.append(one_run(repo, repo / path.relative_to(REPO), seed))
                if trace_only:
                    runs[-1]["checked"] = check_best(repo, runs[-1], program)
                print(_row(runs[-1], None), file=sys.stderr, flush=True)
        assert program.target.workload
        known = best_known(REPO / program.target.workload, reference, program.metric)
        known = max([known] + [r["best"] or 0.0 for r in runs])
        results.append(
            {
                "program": str(path.relative_to(REPO)),
                "target": program.stop.target,
                "max_candidates": program.stop.max_candidates,
                "best_known": known,
                "metric": program.metric,
                "runs": runs,
                "seconds": time.monotonic() - t0,
            }
        )
    return results


def _row(r: dict[str, Any], known: float | None) -> str:
    best = r["best"] or 0.0
    ratio = f"{best / known:>6.1%}" if known else f"{'':>6}"
    checked = f" {r['checked']}" if "checked" in r else ""
    return (
        f"{r['seed']:>4} {best:>7.2f} {ratio} {r['candidates']:>5} "
        f"{r['reached_at'] or 0:>4} {r['end']:>12} {r['regressions']:>4} {r['ties']:>4}{checked}"
    )


def print_runs(results: list[dict[str, Any]]) -> None:
    print("each shipped nki program run as `kernelopt run` runs it (sim), one row per search.seed")
    for res in results:
        known, target = res["best_known"], res["target"]
        print(
            f"\n{res['program']} ({res.get('metric', 'mfu')}): best known {known:.2f}, "
            f"target {target}, "
            f"budget {res['max_candidates']} ({res['seconds']:.0f}s)"
        )
        print(
            f"{'seed':>4} {'best':>7} {'ratio':>6} {'cands':>5} {'at':>4} {'end':>12} "
            f"{'regr':>4} {'ties':>4}"
        )
        for r in res["runs"]:
            print(_row(r, known))
        runs = res["runs"]
        good = sum(
            (r["best"] or 0) >= 0.98 * known or (target is not None and (r["best"] or 0) >= target)
            for r in runs
        )
        print(
            f"within 2% of best known or at target: {good}/{len(runs)}; "
            f"median reached at {statistics.median(r['reached_at'] or 0 for r in runs):g}; "
            f"regressions mean {statistics.mean(r['regressions'] for r in runs):.1f}, "
            f"ties mean {statistics.mean(r['ties'] for r in runs):.1f}"
        )


def workload_runs(
    paths: list[str], seeds: list[int], budget: int, reference: int, trace_only: bool = False
) -> list[dict[str, Any]]:
    """Each workload tuned as a new user would: `kernelopt init --kind nki --workload W`
    (the first knobs screened on sim), then `kernelopt run` with ``budget`` candidates."""
    from kernelopt.scaffold import scaffold

    MeasuredOnce(trace_only)
    results = []
    for given in paths:
        source = Path(given).resolve()
        name = source.stem
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kernelopt-wruns-") as tmp:
            repo = Path(tmp) / "repo"
            workload = repo / "ir" / name / "workload.py"
            workload.parent.mkdir(parents=True)
            shutil.copy2(source, workload)
            git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
            subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
            scaffold(repo, name, "nki", workload)
            program_path = repo / "programs" / f"{name}.md"
            text = program_path.read_text().replace(
                "max_candidates: 500", f"max_candidates: {budget}"
            )
            program_path.write_text(text)
            subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
            subprocess.run([*git, "commit", "-qm", f"kernelopt: {name}"], cwd=repo, check=True)
            program = load_program(program_path)
            runs = []
            for seed in seeds:
                runs.append(one_run(repo, program_path, seed))
                if trace_only:
                    runs[-1]["checked"] = check_best(repo, runs[-1], program)
                print(f"{name} {_row(runs[-1], None)}", file=sys.stderr, flush=True)
        known = best_known(source, reference, program.metric) if reference else 0.0
        known = max([known] + [r["best"] or 0.0 for r in runs])
        results.append(
            {
                "program": f"{given} (init --workload, {budget} candidates)",
                "target": program.stop.target,
                "max_candidates": budget,
                "best_known": known,
                "metric": program.metric,
                "runs": runs,
                "seconds": time.monotonic() - t0,
            }
        )
    return results
