"""Knob spaces declared by a program, and the two proposers that walk them.

A program may say ``knobs: {file: knobs.json, space: {BLOCK: [32, 64, 128]}}``.
A knob candidate rewrites that JSON file; everything else in the file is kept.
``SweepProposer`` walks outward from the best assignment (single-knob changes
first, nearest values first); ``RandomProposer`` samples without replacement.
Both skip what the run has already tried and return None once exhausted.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState, signature_of

Assignment = dict[str, Any]


@dataclass(frozen=True)
class KnobSpace:
    """The knob file (relative to the tree root) and each knob's allowed values, in order."""

    file: str
    space: Mapping[str, Sequence[Any]]

    def __post_init__(self) -> None:
        if not self.file:
            raise ValueError("knobs.file must name a JSON file")
        if not self.space:
            raise ValueError("knobs.space must declare at least one knob")
        frozen: dict[str, tuple[Any, ...]] = {}
        for name, values in self.space.items():
            if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
                raise ValueError(f"knobs.space.{name} must be a non-empty list of values")
            for value in values:
                if not isinstance(value, bool | int | float | str):
                    raise ValueError(
                        f"knobs.space.{name}: {value!r} is not a number, string or boolean"
                    )
            if len({json.dumps(v) for v in values}) != len(values):
                raise ValueError(f"knobs.space.{name} lists a value twice")
            frozen[str(name)] = tuple(values)
        object.__setattr__(self, "space", frozen)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.space)

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.space.values())

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Assignment]:
        for combo in itertools.product(*self.space.values()):
            yield dict(zip(self.names, combo, strict=True))

    def at(self, index: int) -> Assignment:
        """The ``index``-th assignment in iteration order (mixed-radix decode)."""
        if not 0 <= index < self.size:
            raise IndexError(f"assignment index {index} outside 0..{self.size - 1}")
        picked: list[Any] = []
        for values in reversed(list(self.space.values())):
            index, digit = divmod(index, len(values))
            picked.append(values[digit])
        return dict(zip(self.names, reversed(picked), strict=True))

    def first(self) -> Assignment:
        return {name: values[0] for name, values in self.space.items()}

    def default(self, root: Path | None = None) -> Assignment:
        """The knob file's current content in tree ``root`` when it exists, else each
        knob's first value.

        Keys of the file outside the space are kept; knobs it lacks get their first value.
        """
        current = self.read(root) if root is not None else None
        return {**self.first(), **(current or {})}

    def default_from(self, text: str | None, where: str) -> Assignment:
        """As ``default``, from the knob file's text (None: no file); ``where`` names it."""
        current = self.parse(text, where) if text is not None else None
        return {**self.first(), **(current or {})}

    def read(self, root: Path) -> Assignment | None:
        path = Path(root) / self.file
        if not path.exists():
            return None
        return self.parse(path.read_text(encoding="utf-8"), str(path))

    @staticmethod
    def parse(text: str, where: str) -> Assignment:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object of knob values")
        return data

    def render(self, assignment: Mapping[str, Any]) -> str:
        """The knob file's text for ``assignment``: sorted keys, two-space indent, newline."""
        return json.dumps(dict(assignment), indent=2, sort_keys=True) + "\n"

    def candidate(self, assignment: Assignment, centre: Mapping[str, Any]) -> Candidate:
        changes = [
            f"{name} {_show(centre.get(name))} -> {_show(assignment[name])}"
            for name in self.names
            if assignment[name] != centre.get(name)
        ]
        return Candidate(
            kind=KNOB,
            hypothesis=", ".join(changes) or "re-measure the current knobs",
            files={self.file: self.render(assignment)},
            knobs=dict(assignment),
            signature=signature_of(assignment),
        )


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _steps(values: Sequence[Any], current: Any) -> dict[int, int]:
    """How far each value index is from ``current``, in value steps (current itself: 0).

    An off-grid current value (a hand-edited knob file) counts numeric distance
    when it can, else every value is one step further than the one before it.
    """
    if current in values:
        here = values.index(current)
        return {i: abs(i - here) for i in range(len(values))}
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if numeric and isinstance(current, int | float):
        order = sorted(range(len(values)), key=lambda i: (abs(values[i] - current), i))
    else:
        order = list(range(len(values)))
    return {i: rank + 1 for rank, i in enumerate(order)}


class SweepProposer:
    """Exhaustive sweep centred on the best assignment, nearest changes first.

    Order: every single-knob change from the centre (by distance in value steps,
    ties by knob order then lower value first), then every multi-knob change by
    total distance. The centre follows ``state.best_knobs`` (or the last kept
    observation), so the walk restarts around each new best.
    """

    def __init__(self, space: KnobSpace, current: Mapping[str, Any]) -> None:
        self.space = space
        self._centre: Assignment = {**space.first(), **dict(current)}
        # The starting assignment is what the baseline measured: never propose it.
        self._proposed: set[str] = {signature_of(self._centre)}
        # The walk order depends only on the centre; recomputing it on every
        # call would cost a full pass over the space per candidate.
        self._order: tuple[str, list[Assignment]] | None = None

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        centre = {**self._centre, **(state.best_knobs or {})}
        skip = set(state.tried) | self._proposed | {signature_of(centre)}
        batch: list[Candidate] = []
        key = signature_of(centre)
        if self._order is None or self._order[0] != key:
            self._order = (key, self._ordered(centre))
        for assignment in self._order[1]:
            signature = signature_of(assignment)
            if signature in skip:
                continue
            skip.add(signature)
            self._proposed.add(signature)
            batch.append(self.space.candidate(assignment, centre))
            if len(batch) >= max(1, state.batch_size):
                break
        return batch or None

    def observe(self, results: list[Observation]) -> None:
        for result in results:
            if result.verdict == "keep" and result.knobs is not None:
                self._centre = {**self._centre, **result.knobs}

    def _ordered(self, centre: Assignment) -> list[Assignment]:
        steps = [_steps(values, centre.get(name)) for name, values in self.space.space.items()]
        keyed = []
        for indices in itertools.product(*(range(len(v)) for v in self.space.space.values())):
            distances = [steps[k][i] for k, i in enumerate(indices)]
            changed = sum(1 for d in distances if d)
            if changed == 0:
                continue
            first_change = next(k for k, d in enumerate(distances) if d)
            key = (changed > 1, sum(distances), changed, first_change, indices)
            keyed.append((key, indices))
        keyed.sort()
        values = list(self.space.space.values())
        return [
            {**centre, **{name: values[k][idx[k]] for k, name in enumerate(self.space.names)}}
            for _, idx in keyed
        ]


class RandomProposer:
    """Seeded uniform sampling of the space without replacement, skipping what was tried."""

    def __init__(
        self, space: KnobSpace, seed: int, current: Mapping[str, Any] | None = None
    ) -> None:
        self.space = space
        self._base: Assignment = dict(current or {})
        self._rng = random.Random(seed)
        # A lazily applied Fisher-Yates shuffle: draws are O(1) and memory grows
        # only with the number of draws, however large the space is.
        self._swaps: dict[int, int] = {}
        self._drawn = 0

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        centre = {**self.space.first(), **self._base, **(state.best_knobs or {})}
        skip = set(state.tried)
        if self._base or state.best_knobs:
            # The current assignment is the baseline or the best: already measured.
            skip.add(signature_of(centre))
        if self._base:
            # After a keep the centre moves on; the baseline's assignment stays measured.
            skip.add(signature_of({**self.space.first(), **self._base}))
        batch: list[Candidate] = []
        while len(batch) < max(1, state.batch_size):
            index = self._draw()
            if index is None:
                break
            assignment = {**self._base, **self.space.at(index)}
            if signature_of(assignment) in skip:
                continue
            batch.append(self.space.candidate(assignment, centre))
        return batch or None

    def observe(self, results: list[Observation]) -> None:
        """Sampling does not adapt to results."""

    def _draw(self) -> int | None:
        size = self.space.size
        if self._drawn >= size:
            return None
        i = self._drawn
        j = self._rng.randrange(i, size)
        picked = self._swaps.get(j, j)
        self._swaps[j] = self._swaps.get(i, i)
        self._drawn += 1
        return picked
