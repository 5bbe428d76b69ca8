"""Recovery after a crash: finish whatever a killed runner left half done.

State lives only in git, and every step of an attempt leaves git in a state
the next start can finish from (recorder.py). What can be left over:

- a kept attempt whose note exists but whose ledger commit does not: the keep
  commit is made now;
- a decided stop whose Stop Summary was never written: it is written now;
- a worktree that is not at BEST (a candidate written but not committed, or a
  discarded attempt not yet reset): it goes back to BEST, except for an agent
  calling ``try``, whose uncommitted edit in the worktree is the candidate;
- attempts committed but never decided (``RunState.pending``): the loop
  measures them, ``try`` records them as interrupted.
"""

from __future__ import annotations

from kernelopt.decide import Verdict
from kernelopt.history import AttemptRecord, RunRepo, RunState
from kernelopt.recorder import Recorder


def recover(repo: RunRepo, recorder: Recorder, *, agent_mode: bool = False) -> RunState:
    """Attach the run's worktree, repair what a kill interrupted, and return the state."""
    repo.ensure_worktree()
    state = repo.load_state()
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
