"""The git model: a run's branch, worktree, candidate commits, notes and refs.

Run = (program name, tag). Branch ``kernelopt/<name>-<tag>`` lives in a
worktree under the repository's git directory, so the user's checkout, its
index and its uncommitted changes are never touched. Every attempt is a
commit with ``refs/kernelopt/<run>/attempts/<n>`` pointing at it and a note
in ``refs/notes/kernelopt`` holding its measurement and verdict. The branch
only ever holds the baseline and kept work; ``refs/kernelopt/<run>/best`` is
BEST_COMMIT. Everything the runner knows is rebuilt from refs and notes
(``RunRepo.load_state``; the state it returns is in runstate.py).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import io
import json
import os
import shutil
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import git as gitpython

from kernelopt.gitcmd import (
    NOTES_REF,
    Git,
    HistoryError,
    clear_stale_locks,
    write_note,
)
from kernelopt.heal import attached_to, earlier_note, note_problem
from kernelopt.hypothesis import cut_words, safe_hypothesis
from kernelopt.runlock import worktree_admin
from kernelopt.runstate import AttemptRecord, RunState
from kernelopt.worktrees import changed_paths, mark_as_run_worktree, registered_worktree, save_edit

LEDGER = "performance.md"


def default_tag(today: dt.date | None = None) -> str:
    today = today or dt.date.today()
    return today.strftime("%b%d").lower()


def find_repo(start: str | Path = ".") -> Path:
    """The top level of the git work tree containing ``start``."""
    try:
        repo = gitpython.Repo(start, search_parent_directories=True, expand_vars=False)
    except (gitpython.InvalidGitRepositoryError, gitpython.NoSuchPathError):
        raise HistoryError(f"{Path(start).resolve()} is not inside a git repository") from None
    if repo.working_tree_dir is None:
        raise HistoryError(f"{start}: a bare repository has no work tree to tune")
    return Path(repo.working_tree_dir)


def _trailers(run_id: str, attempt: int, kind: str, extra: Mapping[str, str] | None = None) -> str:
    lines = [f"Kernelopt-Run: {run_id}", f"Kernelopt-Attempt: {attempt}", f"Kernelopt-Kind: {kind}"]
    lines += [f"{key}: {value}" for key, value in (extra or {}).items()]
    return "\n".join(lines) + "\n"


def candidate_message(
    run_id: str,
    attempt: int,
    kind: str,
    hypothesis: str,
    trailers: Mapping[str, str] | None = None,
) -> str:
    hypothesis = safe_hypothesis(hypothesis)
    first, _, rest = hypothesis.strip().partition("\n")
    subject = f"kernelopt #{attempt} {kind}: {first.strip() or '(no hypothesis given)'}"
    subject = cut_words(subject, 120)
    body = hypothesis.strip() if (rest.strip() or len(first) > 100) else ""
    parts = [subject, ""]
    if body:
        parts += [body, ""]
    return "\n".join(parts) + "\n" + _trailers(run_id, attempt, kind, trailers)


def read_trailers(message: str) -> dict[str, str]:
    """The ``Kernelopt-*`` trailers of a commit message written by ``candidate_message``.

    Only the last paragraph is read: a hypothesis may contain lines that look
    like trailers, and they must not pass for the runner's own.
    """
    out: dict[str, str] = {}
    block = message.strip().rsplit("\n\n", 1)[-1]
    for line in block.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Kernelopt-"):
            out[key] = value.strip()
    return out


class RunRepo:
    """One run's branch, worktree and records inside a user's repository."""

    def __init__(self, repo_root: str | Path, run_id: str, worktree: str | Path | None = None):
        self.root = Path(repo_root).resolve()
        self.run_id = run_id
        self.git = Git(self.root)
        common = Path(self.git("rev-parse", "--git-common-dir").strip())
        self.common_dir = common if common.is_absolute() else (self.root / common).resolve()
        self.branch = f"kernelopt/{run_id}"
        self.ref_prefix = f"refs/kernelopt/{run_id}"
        self.default_worktree = self.common_dir / "kernelopt" / "worktrees" / run_id
        self.worktree = (
            Path(worktree).resolve()
            if worktree
            else registered_worktree(self.git, self.default_worktree, self.branch, run_id)
        )
        self.wt = Git(self.worktree)
        self.notices: list[str] = []  # what was repaired, for the runner to report
        # The attempt being measured (its edits are saved: worktrees.py).
        self.measuring: int | None = None
        self.saved_edits: list[tuple[int, str]] = []
        self._ensure_identity()

    def _ensure_identity(self) -> None:
        """Commits need an author; fall back to a kernelopt identity when git has none."""
        if self.git("config", "user.email", check=False).strip():
            return
        fallback = {
            "GIT_AUTHOR_NAME": "kernelopt",
            "GIT_AUTHOR_EMAIL": "kernelopt@localhost",
            "GIT_COMMITTER_NAME": "kernelopt",
            "GIT_COMMITTER_EMAIL": "kernelopt@localhost",
        }
        for git in (self.git, self.wt):
            for key, value in fallback.items():
                git.env.setdefault(key, value)

    # -- set-up -----------------------------------------------------------

    def exists(self) -> bool:
        return self.git.ok("rev-parse", "--verify", "-q", f"refs/heads/{self.branch}")

    def ensure_worktree(self, start: str = "HEAD") -> None:
        """Create the branch and its worktree, or re-attach an existing one.

        ``git worktree add`` writes only under the git directory and the new
        worktree path: the user's checkout and index are left as they are.
        """
        if self.worktree.exists() and (self.worktree / ".git").exists():
            return
        if not self.exists() and not self.git.ok(
            "rev-parse", "--verify", "-q", f"{start}^{{commit}}"
        ):
            raise HistoryError(
                f"{self.root}: {start} names no commit; commit something first (kernelopt tunes committed code)"
            )
        self.worktree.parent.mkdir(parents=True, exist_ok=True)
        with worktree_admin(self.common_dir):  # another run's prune must not meet this add
            self.git("worktree", "prune")
            if self.exists():
                self.git("worktree", "add", "-q", str(self.worktree), self.branch)
            else:
                self.git("worktree", "add", "-q", "-b", self.branch, str(self.worktree), start)
        mark_as_run_worktree(self.worktree, self.run_id)

    def clear_stale_locks(self) -> list[Path]:
        """Remove git lock files a dead process left in this run's refs and worktree.

        Only the holder of the run lock calls this: no live kernelopt process
        can then own a lock in the run's own refs, branch or worktree.
        """
        return clear_stale_locks(self.git, self.common_dir, self.run_id, self.worktree)

    # -- refs and notes -------------------------------------------------------

    def ref(self, name: str) -> str:
        return f"{self.ref_prefix}/{name}"

    def read_ref(self, name: str) -> str | None:
        out = self.git("rev-parse", "--verify", "-q", self.ref(name), check=False).strip()
        return out or None

    def set_ref(self, name: str, sha: str) -> None:
        self.git("update-ref", self.ref(name), sha)

    def write_note(self, sha: str, data: Mapping[str, Any]) -> None:
        """Attach ``data`` to ``sha`` as its note, never losing another process's note."""
        text = json.dumps(data, sort_keys=True, indent=1, default=str)
        write_note(self.git, self.common_dir, f"{self.run_id}/{os.getpid()}", sha, text)

    def read_note(self, sha: str) -> dict[str, Any] | None:
        out = self.git("notes", "--ref", NOTES_REF, "show", sha, check=False)
        return json.loads(out) if out.strip() else None

    def head(self) -> str:
        return self.wt("rev-parse", "HEAD").strip()

    # -- state ---------------------------------------------------------------

    def load_state(self) -> RunState:
        """Rebuild the run from refs and notes (one for-each-ref, one cat-file batch)."""
        listing = self.git(
            "for-each-ref", "--format=%(refname) %(objectname)", f"{self.ref_prefix}/"
        )
        attempts: dict[int, str] = {}
        best = None
        stop_sha = None
        for line in listing.splitlines():
            name, sha = line.split()
            tail = name[len(self.ref_prefix) + 1 :]
            if tail == "best":
                best = sha
            elif tail == "stop":
                stop_sha = sha
            elif tail.startswith("attempts/"):
                attempts[int(tail.split("/", 1)[1])] = sha
        notes = self._notes_for([*attempts.values(), *([stop_sha] if stop_sha else [])])
        records = []
        pending = []
        corrupt = []
        restored = []
        for n in sorted(attempts):
            sha = attempts[n]
            note = notes.get(sha)
            if note is None:
                pending.append((n, sha))
            elif (why := note_problem(note, n)) is None:
                records.append(AttemptRecord(n, sha, note))
            elif (earlier := earlier_note(self.git, sha, n)) is not None:
                restored.append((n, sha, why))
                records.append(AttemptRecord(n, sha, earlier))
            else:
                corrupt.append((n, sha, why))
        stop = notes.get(stop_sha) if stop_sha else None
        stop = stop if isinstance(stop, dict) else None
        found = (tuple(records), tuple(pending), stop, tuple(corrupt), tuple(restored))
        return RunState(self.run_id, best, *found)

    def _notes_for(self, shas: Iterable[str]) -> dict[str, Any]:
        wanted = set(shas)
        if not wanted or not self.git.ok("rev-parse", "--verify", "-q", NOTES_REF):
            return {}
        blob_of: dict[str, str] = {}
        for line in self.git("notes", "--ref", NOTES_REF, "list").splitlines():
            blob, target = line.split()
            if target in wanted:
                blob_of[target] = blob
        if not blob_of:
            return {}
        order = list(blob_of.items())
        payload = "".join(f"{blob}\n" for _, blob in order)
        raw = self.git.raw("cat-file", "--batch", input=payload)
        out: dict[str, Any] = {}
        pos = 0
        for target, _ in order:
            header_end = raw.index(b"\n", pos)
            size = int(raw[pos:header_end].split()[2])
            body = raw[header_end + 1 : header_end + 1 + size]
            pos = header_end + 1 + size + 1
            try:
                out[target] = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                out[target] = f"is not valid JSON ({exc})"  # note_problem says so
        return out

    # -- candidates ------------------------------------------------------------

    def write_files(self, files: Mapping[str, str]) -> None:
        for rel, text in files.items():
            path = (self.worktree / rel).resolve()
            if self.worktree not in path.parents:
                raise HistoryError(f"candidate file {rel!r} is outside the worktree")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def is_dirty(self) -> bool:
        return bool(self.wt("status", "--porcelain", "--untracked-files=all").strip())

    def commit_attempt(
        self,
        attempt: int,
        kind: str,
        hypothesis: str,
        *,
        allow_empty: bool = False,
        parent: str | None = None,
        trailers: Mapping[str, str] | None = None,
    ) -> str | None:
        """Commit the worktree as attempt ``attempt`` and record its ref.

        The commit object exists before its attempt ref and the branch move (at once),
        so a runner killed at any instant leaves either no attempt (dirty
        worktree, reset on resume) or a complete, reachable one. Returns None
        when there is nothing to commit and ``allow_empty`` is false.
        """
        if attached_to(self.worktree) != f"refs/heads/{self.branch}":
            from kernelopt.recovery import reattach  # an agent moved the worktree off the branch

            base = parent or self.git("rev-parse", f"refs/heads/{self.branch}").strip()
            self.notices.append(reattach(self, base) or "")
        self.wt("add", "-A")
        tree = self.wt("write-tree").strip()
        parent = parent or self.head()
        if not allow_empty and tree == self.wt("rev-parse", f"{parent}^{{tree}}").strip():
            return None
        message = candidate_message(self.run_id, attempt, kind, hypothesis, trailers)
        sha = self.wt("commit-tree", tree, "-p", parent, "-F", "-", input=message).strip()
        ref = self.ref(f"attempts/{attempt}")  # moves with the branch, in one transaction
        move = f"update {ref} {sha}\nupdate refs/heads/{self.branch} {sha}"
        if not self.wt.ok("update-ref", "--stdin", input=f"{move} {parent}\n"):  # else from HEAD
            self.wt("update-ref", "--stdin", input=f"{move} {self.head()}\n")
        return sha

    @functools.lru_cache(maxsize=64)  # noqa: B019 - a commit's content never changes
    def listing(self, sha: str) -> str:
        """``git ls-tree -r`` of a commit: its content key, changed files, measured tree."""
        return self.git("ls-tree", "-r", sha)

    def content_key(self, sha: str, device_kind: str) -> str:
        """Identity of what is measured: the tree without the ledger, and the device kind."""
        listing = self.listing(sha)
        kept = [line for line in listing.splitlines() if not line.endswith(f"\t{LEDGER}")]
        digest = hashlib.sha1(("\n".join(kept) + f"\n{device_kind}").encode()).hexdigest()
        return digest[:20]

    def files_of(self, sha: str, parent: str | None = None) -> list[str]:
        """The paths ``sha`` changes against ``parent`` (default: its first parent)."""
        return list(self._files_between(parent or f"{sha}^", sha))

    @functools.lru_cache(maxsize=64)  # noqa: B019 - commits never change; asked twice per attempt
    def _files_between(self, base: str, sha: str) -> tuple[str, ...]:
        """Added, removed and changed paths (both names of a rename), from cached listings."""
        if len(base) != 40 or "^" in base:
            out = self.git("diff", "--no-renames", "--name-only", base, sha, check=False)
            return tuple(line for line in out.splitlines() if line)
        return changed_paths(self.listing(base), self.listing(sha))

    def files_at(self, rev: str, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` (from the repository root) are files in ``rev``'s tree."""
        out = self.git(
            "ls-tree", "-r", "--full-tree", "--name-only", rev, "--", *paths, check=False
        )
        return {line for line in out.splitlines() if line} & set(paths)

    def bring_back(self, sha: str) -> None:
        """Put ``sha``'s tree in the worktree as an uncommitted change on top of HEAD."""
        # Files the commit added come back untracked, files it deleted go again.
        self.wt("restore", f"--source={sha}", "--worktree", "--", ".")

    def reset_to(self, sha: str) -> None:
        """Point the branch and worktree at ``sha``, dropping leftovers of a candidate; right
        after a measurement (``measuring``) a change there is someone's edit, saved first."""
        attempt, self.measuring = self.measuring, None
        if attempt is not None:
            if not self.is_dirty():
                self.wt("reset", "-q", "--hard", sha)
                return
            self.saved_edits.append((attempt, save_edit(self, attempt)))
        self.wt("reset", "-q", "--hard", sha)
        self.wt("clean", "-q", "-fd")

    def commit_ledger(self, subject: str, body: str, trailers: Mapping[str, str]) -> str:
        """Commit the worktree's performance.md change on the branch."""
        self.wt("add", LEDGER)
        lines = [subject, ""]
        if body:
            lines += [body, ""]
        lines += [f"{k}: {v}" for k, v in trailers.items()]
        # Only the ledger: whatever else the worktree holds (an agent's staged
        # edit) is not kernelopt's to commit.
        self.wt(
            "commit", "-q", "--no-verify", "-F", "-", "--", LEDGER, input="\n".join(lines) + "\n"
        )
        return self.head()

    def export_tree(self, sha: str, dest: Path) -> None:
        """Write ``sha``'s tree into ``dest`` (git archive), replacing what was there."""
        data = self.git.raw("archive", "--format=tar", sha)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")


def committed_text(root: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` as committed at ``rev``; None when it is not there."""
    git = Git(root)
    if not git.ok("cat-file", "-e", f"{rev}:{path}"):
        return None
    return git("show", f"{rev}:{path}")


def require_commit(root: Path) -> None:
    """Raise HistoryError unless the repository has a commit to start a run from."""
    if not Git(root).ok("rev-parse", "--verify", "-q", "HEAD^{commit}"):
        raise HistoryError(
            f"{root}: the repository has no commit yet; commit your code first "
            "(kernelopt tunes committed code): git add -A && git commit -m 'code to tune'"
        )


def list_runs(repo_root: Path) -> list[str]:
    """Every run with records in the repository, in order of first appearance."""
    out = Git(repo_root)("for-each-ref", "--format=%(refname)", "refs/kernelopt/")
    runs: list[str] = []
    for line in out.splitlines():
        parts = line.split("/")
        if len(parts) >= 4 and parts[2] not in runs:
            runs.append(parts[2])
    return runs
