"""Wiring a program to a runner: which target, which device, which proposer."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.executor import Executor, Gated, InProcess
from kernelopt.history import (
    Git,
    HistoryError,
    RunRepo,
    committed_text,
    find_repo,
    list_runs,
    require_commit,
)
from kernelopt.loop import Runner
from kernelopt.program import Program, ProgramError, program_from_text
from kernelopt.proposers.base import Proposer
from kernelopt.rules import rule_changes
from kernelopt.sampling import Reporter
from kernelopt.targets import LocalCommand, command_target
from kernelopt.targets.base import Target
from kernelopt.worktrees import worktree_problem


class SessionError(ValueError):
    """The program cannot be run as asked; the message says what to change."""


def choose_device(program: Program) -> tuple[str, str]:
    """(device kind, why) for ``device.kind: auto`` and explicit kinds."""
    kind = program.device.kind
    hosts = program.device.hosts
    if program.device.executor == "ray":
        if kind == "auto":
            kind = "neuron" if program.target.kind == "nki" else "none"
        return kind, f"{kind} devices of the Ray cluster at {program.device.ray.address}"
    if program.target.kind == "command":
        if kind == "auto" and not hosts:
            return "none", "this machine (command target, no hosts or device gate configured)"
        if kind == "none" and not hosts:
            return "none", "this machine (device kind none)"
        where = ", ".join(hosts) or "localhost"
        return kind, f"the {kind} gate on {where}"
    if kind == "sim" or (kind == "auto" and not hosts):
        why = "from the program" if kind == "sim" else "no Neuron device or host configured"
        return "sim", f"kernelopt's NKI simulator with a Trainium2 cost model ({why})"
    if kind in ("auto", "neuron"):
        return "neuron", f"Trainium2 through neuron tools on {', '.join(hosts) or 'localhost'}"
    return kind, f"{kind} (from the program)"


def open_program_hosts(program: Program) -> list[Any]:
    """The program's device.hosts as Hosts (ssh config and host-key policy from the program)."""
    from kernelopt.hosts.open import open_hosts

    return open_hosts(
        list(program.device.hosts),
        ssh_config=os.path.expanduser(program.device.ssh_config),
        trust_new_hosts=program.device.trust_new_hosts,
    )


def make_executor(program: Program, device: str, reporter: Reporter | None = None) -> Executor:
    """In this process for sim and gate-less command targets; else gated devices on hosts.

    Waits for an idle device are reported to ``reporter``."""
    if program.device.executor == "ray":  # Ray schedules the devices (docs/ray.md)
        from kernelopt.ray_executor import RayExecutorError, ray_executor_for

        try:
            return ray_executor_for(program, device, reporter)
        except RayExecutorError as exc:
            raise SessionError(f"{program.path}: {exc}") from None
    if device == "sim" or (device == "none" and not program.device.hosts):
        return InProcess(device)
    from kernelopt.devices.registry import make_gate

    try:
        hosts = open_program_hosts(program)
        gate = make_gate(device)
    except ValueError as exc:
        raise SessionError(f"{program.path}: device: {exc}") from None

    def on_wait(notice: Any) -> None:
        if reporter is not None:
            reporter.event(
                "waiting",
                reason=notice.reason,
                waited_s=notice.waited_s,
                next_poll_s=notice.next_poll_s,
            )

    return Gated(
        gate,
        hosts,
        poll_s=program.device.poll_s,
        max_wait_s=program.device.max_wait_s,
        activate=program.device.neuron.activate,
        python=program.device.python,
        on_wait=on_wait,
    )


def make_target(program: Program, root: Path, device: str, run_id: str | None = None) -> Target:
    """How the program's target is measured on ``device``."""
    if program.target.kind == "command":
        return LocalCommand(command_target(program), device=device)
    if device == "neuron":
        from kernelopt.devices.registry import make_gate
        from kernelopt.neuron.target import NeuronTarget

        hosts = open_program_hosts(program)
        return NeuronTarget.from_program(program, root, hosts, make_gate("neuron"), run=run_id)
    if device != "sim":
        raise SessionError(f"{program.path}: nki targets measure on sim or neuron, not {device!r}")
    from kernelopt.targets.nki import NkiSimTarget

    return NkiSimTarget.from_program(program, root)


def make_proposer(
    program: Program, root: Path, start: str = "HEAD", reporter: Reporter | None = None
) -> Proposer | None:
    """Where candidates come from: the knob space's proposer, or None without one.
    ``reporter`` hears how far an nki proposer's screened first batch is.

    The knob search starts from the knob file as committed at ``start`` (the
    run's baseline, or HEAD for a new run): what the baseline measures, never
    an uncommitted edit in the user's checkout.
    """
    target = program.target
    if target.kind == "command":
        if target.knobs is None or not target.knobs.space:
            return None
        from kernelopt.proposers.space import KnobSpace, RandomProposer, SweepProposer

        space = KnobSpace(target.knobs.file, {k: list(v) for k, v in target.knobs.space.items()})
        current = space.default_from(
            committed_text(root, start, space.file), f"{space.file} at {start}"
        )
        if program.strategy == "random":
            return RandomProposer(space, program.seed, current)
        return SweepProposer(space, current)
    if target.knobs is None:
        return None
    from kernelopt.proposers.nki import NkiKnobProposer
    from kernelopt.workload import load_workload

    assert target.workload
    workload = load_workload(root / target.workload)
    return NkiKnobProposer(
        workload,
        knobs_path=target.knobs.file,
        kernel_path=target.kernel,
        seed=program.seed,
        baseline_kernel=committed_text(root, start, target.kernel) if target.kernel else None,
        baseline_knobs=_knobs_at(root, start, target.knobs.file),
        reporter=reporter,
    )


def _knobs_at(root: Path, rev: str, path: str) -> dict[str, Any] | None:
    """The knob file as committed at ``rev`` (None when absent or not a JSON object)."""
    text = committed_text(root, rev, path)
    try:
        knobs = json.loads(text) if text else None
    except ValueError:
        return None
    return knobs if isinstance(knobs, dict) else None


def make_screening(
    program: Program, root: Path, start: str, runner: Runner, inner: Proposer
) -> Proposer:
    """``inner`` behind sim screening (search.screen), recorded under the run's git directory."""
    from kernelopt.proposers.screen import ScreenLog, screening_for
    from kernelopt.sim.calibration import CalibrationError

    assert program.target.workload
    workload = committed_text(root, start, program.target.workload)
    if workload is None:
        workload = (root / program.target.workload).read_text()
    log = ScreenLog.of_run(runner.repo.common_dir, runner.run_id)
    try:
        run = (runner.repo.common_dir, runner.run_id)
        return screening_for(inner, program, root, workload, log, run)
    except CalibrationError as exc:
        raise SessionError(f"{program.path}: search.screen.calibration: {exc}") from None


@dataclass(frozen=True)
class AgentCommand:
    """An agent to drive: its command line and how long one round may take."""

    command: str
    timeout_s: float = 1800.0


@dataclass
class Session:
    program: Program
    root: Path
    run_id: str
    device: str
    device_reason: str
    runner: Runner
    proposer: Proposer | None

    @classmethod
    def create(
        cls,
        program: Program,
        *,
        tag: str,
        worktree: str | None = None,
        reporter: Reporter | None = None,
        remeasure: bool = False,
        agent: AgentCommand | None = None,
    ) -> Session:
        """A run of ``program`` tagged ``tag``; its candidates come from the knob space,
        or from ``agent`` when given."""
        root = find_repo(program.path.resolve().parent)
        require_commit(root)
        device, reason = choose_device(program)
        runner = Runner(
            program,
            root,
            make_target(program, root, device, f"{program.name}-{tag}"),
            tag=tag,
            worktree=Path(worktree) if worktree else None,
            reporter=reporter,
            remeasure=remeasure,
            executor=make_executor(program, device, reporter),
        )
        if worktree and (why := worktree_problem(runner.repo)):
            raise SessionError(
                f"--worktree {worktree}: {why}. Name a new folder outside your checkout, "
                f"or leave --worktree out (default: {runner.repo.default_worktree})"
            )
        if agent is not None:
            from kernelopt.proposers.agent import AgentProposer

            proposer: Proposer | None = AgentProposer(
                agent.command, program, runner.repo, timeout_s=agent.timeout_s, reporter=reporter
            )
        else:
            # A run's recorded baseline (a failed one is measured again from HEAD).
            baseline = runner.repo.load_state().baseline if runner.repo.exists() else None
            start = baseline.commit if baseline else "HEAD"
            proposer = make_proposer(program, root, start, reporter)
            if proposer is not None and program.screen is not None and device == "neuron":
                proposer = make_screening(program, root, start, runner, proposer)
        return cls(program, root, runner.run_id, device, reason, runner, proposer)

    def close(self, finished: bool = False) -> None:
        """Stop the proposer's background work (screening's workers, a running refit).

        After a normal end (``finished``) a refit under way is finished and
        recorded; after Ctrl-C or an error it is stopped. Closing twice is harmless.
        """
        from kernelopt.proposers.screen import ScreeningProposer

        if isinstance(self.proposer, ScreeningProposer):
            self.proposer.close(wait=finished)

    @classmethod
    def attach(
        cls,
        program: Program,
        root: Path,
        run_id: str,
        reporter: Reporter | None = None,
        *,
        remeasure: bool = False,
    ) -> Session:
        """The run ``run_id`` of ``program``, for one attempt at a time (``kernelopt try``)."""
        tag = run_id[len(program.name) + 1 :] if run_id.startswith(program.name + "-") else run_id
        device, reason = choose_device(program)
        runner = Runner(
            program,
            root,
            make_target(program, root, device, run_id),
            tag=tag,
            reporter=reporter,
            remeasure=remeasure,
            executor=make_executor(program, device, reporter),
        )
        if runner.run_id != run_id:
            raise SessionError(f"program {program.name!r} does not belong to run {run_id!r}")
        return cls(program, root, run_id, device, reason, runner, None)


def describe_device(session: Session) -> str:
    return f"{session.device}: {session.device_reason}"


def current_run(cwd: Path) -> tuple[Path, str]:
    """(main repository root, run id) when ``cwd`` is inside a run's worktree."""
    git = Git(cwd)
    try:
        branch = git("rev-parse", "--abbrev-ref", "HEAD").strip()
        common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    except HistoryError:
        raise SessionError(f"{cwd} is not inside a git repository") from None
    top = Path(git("rev-parse", "--show-toplevel").strip()).resolve()
    if top.parent == (common / "kernelopt" / "worktrees").resolve():
        branch = f"kernelopt/{top.name}"  # a run's worktree, whatever HEAD is on now
    if not branch.startswith("kernelopt/"):
        raise SessionError(
            f"{cwd} is not a kernelopt run worktree (branch {branch!r}); "
            "cd into the worktree `kernelopt status` shows"
        )
    root = (
        common.parent
        if common.name == ".git"
        else Path(Git(common)("rev-parse", "--show-toplevel").strip())
    )
    return root, branch.split("/", 1)[1]


def resolve_run(cwd: Path, run_id: str | None, how_to_name: str = "--run RUN") -> tuple[Path, str]:
    """The run named, the run whose worktree we are in, or the repository's only run.

    ``how_to_name`` is how the calling command takes a run, for the message
    that asks to pick one when there are several.
    """
    if run_id is None:
        try:
            return current_run(cwd)
        except SessionError:
            pass
    root = find_repo(cwd)
    common = Path(Git(root)("rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    if common.name == ".git":
        root = common.parent
    runs = list_runs(root)
    if run_id is not None:
        if run_id not in runs:
            known = ", ".join(runs) or "none yet"
            raise SessionError(f"no run {run_id!r} in {root} (runs: {known})")
        return root, run_id
    if len(runs) == 1:
        return root, runs[0]
    if not runs:
        raise SessionError(
            f"no kernelopt runs in {root} yet: start one with `kernelopt run PROGRAM`"
        )
    raise SessionError(f"several runs in {root}; pick one with {how_to_name} ({', '.join(runs)})")


def program_for_run(root: Path, run_id: str, named: Path | None = None) -> Program:
    """The program a run was started with, as the run's start commit holds it.

    Never the worktree's copy: the rules are not the candidate's. ``named``
    (``try --program``) must be that same program file.
    """
    repo = RunRepo(root, run_id)
    state = repo.load_state()
    if not state.attempts:
        raise SessionError(f"run {run_id} has no baseline yet: start it with `kernelopt run`")
    rel = state.attempts[0].note.get("program")
    if not rel:
        raise SessionError(f"run {run_id}: its baseline does not name a program")
    if named is not None and _relative_to_tree(named, (repo.worktree, root)) != rel:
        raise SessionError(
            f"--program {named}: run {run_id} goes by {rel} as it started; "
            "leave --program out (the program is read from the run's start commit)"
        )
    start = (state.baseline or state.attempts[0]).commit
    text = committed_text(root, start, str(rel))
    if text is None:
        raise SessionError(f"run {run_id}: {rel} is not in its start commit {start[:10]}")
    # Named by its place in the repository (the notes' "program"), read from the commit.
    return program_from_text(root / rel, text, root=repo.worktree)


def _relative_to_tree(path: Path, trees: tuple[Path, ...]) -> str | None:
    path = path.resolve()
    for tree in trees:
        if tree.resolve() in path.parents:
            return path.relative_to(tree.resolve()).as_posix()
    return None


def program_to_run(program: Program, tag: str) -> tuple[Program, list[str]]:
    """The rules ``kernelopt run`` goes by, and warnings about the file it was given.

    A run's rules are its program as committed where the run starts: HEAD for
    a new run, the run's start commit for a resumed one. An uncommitted edit
    of the program, or a program changed on the user's branch since the run
    started, is named in a warning and not used.
    """
    root = find_repo(program.path.resolve().parent)
    rel = _relative_to_tree(program.path, (root,))
    if rel is None:
        return program, []
    repo = RunRepo(root, f"{program.name}-{tag}")
    state = repo.load_state() if repo.exists() else None
    baseline = state.baseline if state is not None else None
    if baseline is not None:
        started_rel = str(baseline.note.get("program") or rel)
        text = committed_text(root, baseline.commit, started_rel)
        where = f"run {repo.run_id}'s start commit {baseline.commit[:10]}"
    else:
        started_rel = rel
        text = committed_text(root, "HEAD", rel)
        where = "HEAD"
    if text is None:
        if baseline is None:
            return program, [f"{rel} is not committed: its rules are read from the file as it is"]
        return program, [f"{started_rel} is not in {where}: the run goes by {rel} as it is"]
    try:
        ruled = program_from_text(program.path, text, root)
    except ProgramError as exc:
        raise SessionError(f"{rel} as {where} holds it is not a valid program:\n{exc}") from None
    changes = rule_changes(ruled, program)
    if not changes:
        return ruled, []
    why = (
        "uncommitted changes to the program are ignored"
        if baseline is None
        else "the run keeps the rules it started with (start a new run with --tag to use these)"
    )
    return ruled, [f"{rel} differs from {where}; {why}: " + "; ".join(changes)]


__all__ = ["Session", "SessionError", "current_run", "program_to_run", "resolve_run"]
