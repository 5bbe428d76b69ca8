"""Recovery after a crash: finish whatever a killed runner left half done.

State lives only in git, and every step of an attempt leaves git in a state
the next start can finish from (recorder.py). What can be left over:

- a kept attempt whose note exists but whose ledger commit does not: the keep
  commit is made now;
- a decided stop whose Stop Summary was never written: it is written now;
- a worktree that is not at BEST (a candidate written but not committed, or a
  discarded attempt not yet reset): it goes back to BEST, except for an agent
  calling ``try``, whose uncommitted edit in the worktree is the candidate;
- attempts committed but never decided (``RunState.pending``): ``run`` and
  ``try`` both measure them as committed (``measure_pending``), never fold
  them into the next candidate.

And what something else broke (docs/reliability.md, "The run repairs itself"):

- a worktree an agent moved off the run's branch (``reattach``);
- a note that is not a readable record of its attempt: written back from its
  last readable version in the notes history, or the run refuses to go on
  (it will not guess BEST or the counters);
- a best ref deleted, or pointing at something that is not the record of
  the newest kept attempt: pointed again at that attempt's keep commit (made
  again when it is gone), never a new baseline.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from kernelopt.decide import Verdict
from kernelopt.gitcmd import NOTES_REF
from kernelopt.heal import attached_to, damage
from kernelopt.history import AttemptRecord, HistoryError, RunRepo, RunState, read_trailers
from kernelopt.recorder import Recorder
from kernelopt.records import AttemptResult


def recover(repo: RunRepo, recorder: Recorder, *, agent_mode: bool = False) -> RunState:
    """Attach the run's worktree, repair what a kill interrupted, and return the state."""
    repo.ensure_worktree()
    state = repo.load_state()
    base = state.pending[-1][1] if state.pending else state.best_commit
    if base is None:  # no BEST yet (a failed baseline): the branch's tip
        tip = f"refs/heads/{repo.branch}"
        base = repo.git("rev-parse", "-q", "--verify", tip, check=False).strip()
    if base and (notice := reattach(repo, base)):
        repo.notices.append(notice)
        if not agent_mode and repo.is_dirty():  # `run` starts from BEST: set it aside, named
            repo.notices.append(set_aside(repo, base))
    state = _heal_notes(repo, state)
    state = _heal_best(repo, recorder, state)
    if state.started:
        _finish_last(repo, recorder, state, agent_mode=agent_mode)
        state = repo.load_state()
    last = state.attempts[-1] if state.attempts else None
    if state.stop is None and last is not None and last.note.get("stop_reason"):
        # Killed while recording a stop its last attempt decided: record it now,
        # rather than measuring candidates past the limit.
        state = recorder.stop(str(last.note["stop_reason"]))
    return state


def _finish_last(repo: RunRepo, recorder: Recorder, state: RunState, *, agent_mode: bool) -> None:
    best_ref = state.best_commit
    assert best_ref is not None
    last = state.attempts[-1] if state.attempts else None
    if (
        last is not None
        and last.verdict in (Verdict.KEEP, Verdict.BASELINE)
        and not _kept_after(repo, last, best_ref)
    ):
        # Killed between the note and the keep commit: redo the keep commit.
        repo.reset_to(last.commit)
        recorder.keep(last.attempt, last.commit, last.note)
        return
    if not agent_mode and (repo.head() != best_ref or repo.is_dirty()):
        repo.reset_to(best_ref)


def _kept_after(repo: RunRepo, record: AttemptRecord, best_ref: str) -> bool:
    """Whether BEST already sits on the keep commit of ``record``."""
    parent = repo.git("rev-parse", f"{best_ref}^", check=False).strip()
    if parent == record.commit:
        return True
    # A later ledger commit (a stop summary) may sit on top of the keep commit.
    return repo.git.ok("merge-base", "--is-ancestor", record.commit, best_ref) and (
        record.commit != best_ref
    )


def reattach(repo: RunRepo, base: str) -> str | None:
    """Put the worktree back on the run's branch at ``base``, carrying over what was done.

    An agent in the worktree may have run ``git checkout -b``, ``git checkout
    <sha>`` or ``git commit``. When everything it did builds on ``base`` (the
    tip the branch should have: BEST, or a pending attempt), its commits and
    its uncommitted edit become the worktree's uncommitted change on the run
    branch at ``base``: the next candidate, nothing lost. When it does not
    (a detached HEAD on an older commit with an edit on top), nothing is
    guessed: HistoryError says what to run. Returns what was done, or None.
    """
    ref = f"refs/heads/{repo.branch}"
    on = attached_to(repo.worktree)
    head = repo.head()
    if on == ref and head == base:
        return None
    builds_on_base = head == base or repo.git.ok("merge-base", "--is-ancestor", base, head)
    if on == ref:
        if not builds_on_base or _own_commits(repo, base, head):
            return None  # kernelopt's own step a kill interrupted: the recovery finishes it
        where = f"the run's branch {repo.branch}, moved to {head[:12]}"
    elif on:
        where = f"branch {on.removeprefix('refs/heads/')!r} at {head[:12]}"
    else:
        where = f"a detached HEAD at {head[:12]}"
    if builds_on_base:
        carried = int(repo.git("rev-list", "--count", f"{base}..{head}").strip() or 0)
        dirty = repo.is_dirty()
        if on != ref:
            repo.wt("symbolic-ref", "HEAD", ref)
        # The branch at base, its index too; the files in the worktree stay as they are.
        repo.wt("reset", "-q", base)
        what = []
        if carried:
            what.append(f"{carried} commit(s) made on top of it")
        if dirty:
            what.append("the uncommitted edit")
        kept = (
            " and ".join(what) + " carried over as the worktree's change"
            if what
            else "nothing to carry"
        )
        return f"the worktree was on {where}; put it back on {repo.branch} ({kept})"
    if (
        not repo.is_dirty()
        and repo.git(
            "for-each-ref", "--count=1", "--contains", head, "--format=%(refname)", "refs/"
        ).strip()
    ):
        # Nothing uncommitted, and the commits stay reachable from another ref.
        repo.wt("symbolic-ref", "HEAD", ref)
        repo.wt("reset", "-q", "--hard", base)
        return f"the worktree was on {where}; put it back on {repo.branch} (nothing to carry)"
    wt = shlex.quote(str(repo.worktree))
    branch = shlex.quote(repo.branch)
    raise HistoryError(
        f"the run's worktree {repo.worktree} is on {where}, which does not build on the "
        f"run's branch {repo.branch} (at {base[:12]}); kernelopt will not guess how to carry "
        f"that over. Move your change onto the run's branch:\n"
        f"  cd {wt} && git stash -u && git checkout {branch} && git stash pop\n"
        f"or set it aside and go back to the run's branch:\n"
        f"  cd {wt} && git stash -u && git checkout {branch}\n"
        f"(commits made there stay reachable as {head[:12]})"
    )


def _own_commits(repo: RunRepo, base: str, head: str) -> bool:
    """Whether kernelopt itself made any commit of ``base..head`` (an attempt, a ledger commit)."""
    out = repo.git(
        "log", "--format=%(trailers:key=Kernelopt-Run,valueonly)", f"{base}..{head}", check=False
    )
    return repo.run_id in out.split()


def _heal_notes(repo: RunRepo, state: RunState) -> RunState:
    """Write back notes read from the notes history; refuse notes that cannot be read at all."""
    if state.restored:
        said = damage(state.restored, ())
        repo.notices.extend(w.replace(" is used", " is written back") for w in said)
        notes = {r.commit: r.note for r in state.attempts}
        for _, sha, _ in state.restored:
            repo.write_note(sha, notes[sha])
        state = repo.load_state()
    if state.corrupt:
        n, sha, why = state.corrupt[0]
        listing = ", ".join(f"#{c[0]}" for c in state.corrupt)
        raise HistoryError(
            f"the note of attempt #{n} ({sha[:12]}) {why}, and the notes history holds no "
            f"readable version of it (unreadable: {listing}); kernelopt will not guess BEST "
            "or the counters without it. Put back the note kernelopt wrote, e.g.:\n"
            f"  git notes --ref {NOTES_REF} log  # find it\n"
            f"  git notes --ref {NOTES_REF} edit {sha}"
        )
    return state


def kept_by(repo: RunRepo, sha: str) -> int | None:
    """The attempt whose keep commit ``sha`` is (or sits on, under Stop Summaries)."""
    for _ in range(8):
        body = repo.git("log", "-1", "--format=%B", sha, "--", check=False)
        trailers = read_trailers(body)
        if trailers.get("Kernelopt-Run") != repo.run_id:
            return None
        kept = trailers.get("Kernelopt-Kept", "")
        if kept.isdigit():
            return int(kept)
        if "Kernelopt-Stop" not in trailers:
            return None
        sha = f"{sha}^"
    return None


def _heal_best(repo: RunRepo, recorder: Recorder, state: RunState) -> RunState:
    """Point BEST at the newest kept attempt's record when the best ref lost it."""
    newest = state.best
    if newest is None:
        return state
    have = kept_by(repo, state.best_commit) if state.best_commit else None
    if have == newest.attempt:
        return state
    kept = [r.attempt for r in state.attempts if r.verdict in (Verdict.KEEP, Verdict.BASELINE)]
    if have is not None and state.attempts[-1] is newest and kept[-2:-1] == [have]:
        return state  # killed between the note and the keep commit: _finish_last makes it
    was = f"pointed at {state.best_commit[:12]}" if state.best_commit else "was missing"
    keep_commit = _keep_commit_of(repo, newest)
    if keep_commit is not None:
        stop = repo.read_ref("stop")
        if state.stop is not None and stop and kept_by(repo, stop) == newest.attempt:
            keep_commit = stop
        repo.set_ref("best", keep_commit)
    else:
        repo.reset_to(newest.commit)
        recorder.keep(newest.attempt, newest.commit, newest.note)
    repo.notices.append(
        f"the best ref {repo.ref('best')} {was}; rebuilt from the notes: BEST is attempt "
        f"#{newest.attempt} ({newest.note.get('metric_name', 'metric')} {newest.metric})"
    )
    return repo.load_state()


def _keep_commit_of(repo: RunRepo, record: AttemptRecord) -> str | None:
    """The ledger commit that kept ``record`` (its only parent is the attempt's commit)."""
    out = repo.git(
        "log", "--all", "--format=%H %P", "--all-match",
        f"--grep=^Kernelopt-Run: {repo.run_id}$", f"--grep=^Kernelopt-Kept: {record.attempt}$",
        check=False,
    )  # fmt: skip
    for line in out.splitlines():
        sha, *parents = line.split()
        if parents == [record.commit] and kept_by(repo, sha) == record.attempt:
            return sha
    return None


def measure_pending(
    repo: RunRepo,
    pending: Sequence[tuple[int, str]],
    measure: Callable[[], list[AttemptResult]],
) -> AttemptResult | None:
    """For ``try``: measure what a killed runner left committed, as ``run`` does, and keep
    the agent's later edit apart from it.

    The worktree's content beyond the last pending commit (the agent's edit
    since) is set aside in ``refs/kernelopt/<run>/carried``; the pending
    attempts are measured as they were committed; then the files the agent
    changed since come back on top of BEST, as the next candidate. Returns
    the last pending attempt's result when nothing further is to be tried.
    """
    last = pending[-1][1]
    repo.wt("add", "-A")
    tree = repo.wt("write-tree").strip()
    aside = None
    if tree != repo.git("rev-parse", f"{last}^{{tree}}").strip():
        message = (
            f"kernelopt: the worktree's edit after attempt #{pending[-1][0]} was interrupted\n"
        )
        aside = repo.git("commit-tree", tree, "-p", last, input=message).strip()
        repo.set_ref("carried", aside)
    results = measure()
    for result in results:
        repo.notices.append(
            f"attempt #{result.attempt}, left unmeasured by a killed kernelopt process, "
            f"was measured as committed: {result.verdict}"
        )
    if aside is None or results[-1].stop:
        return results[-1]
    changed = repo.git("diff", "--name-status", "--no-renames", "-z", last, aside)
    fields = changed.split("\0")
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        if status == "D":
            (repo.worktree / path).unlink(missing_ok=True)
        elif path:
            repo.wt("restore", f"--source={aside}", "--worktree", "--", path)
    repo.git("update-ref", "-d", repo.ref("carried"))
    return None


def set_aside(repo: RunRepo, base: str) -> str:
    """Keep the worktree's change as a commit on ``base`` in ``refs/kernelopt/<run>/carried``."""
    repo.wt("add", "-A")
    tree = repo.wt("write-tree").strip()
    message = "kernelopt: the worktree's change, set aside before the run went on from BEST\n"
    sha = repo.git("commit-tree", tree, "-p", base, input=message).strip()
    repo.set_ref("carried", sha)
    return (
        f"the worktree's change is set aside as {sha[:12]} ({repo.ref('carried')}); "
        f"bring it back with: git -C {shlex.quote(str(repo.worktree))} checkout {sha[:12]} -- ."
    )
