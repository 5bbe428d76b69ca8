import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelopt.proposers.base import Observation, Proposer, ProposerState, signature_of
from kernelopt.proposers.space import KnobSpace, RandomProposer, SweepProposer

SPACE = {"BLOCK": [8, 16, 32, 64, 128], "ORDER": ["ij", "ji"]}


def state(tried: set[str] = frozenset(), best: dict | None = None, batch: int = 1):
    return ProposerState(
        best_metric=None, best_knobs=best, better="lower", tried=frozenset(tried), batch_size=batch
    )


def drain(proposer, best: dict | None = None, batch: int = 1) -> list:
    """Propose until exhausted, marking everything proposed as tried."""
    tried: set[str] = set()
    out = []
    while (got := proposer.propose(state(tried, best, batch))) is not None:
        assert 1 <= len(got) <= batch
        for c in got:
            tried.add(c.signature)
            out.append(c)
    return out


def test_space_size_iteration_and_indexing_agree() -> None:
    space = KnobSpace("k.json", SPACE)
    listed = list(space)
    assert space.size == len(space) == len(listed) == 10
    assert [space.at(i) for i in range(10)] == listed
    assert listed[0] == {"BLOCK": 8, "ORDER": "ij"} and listed[1] == {"BLOCK": 8, "ORDER": "ji"}
    with pytest.raises(IndexError):
        space.at(10)


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({}, "at least one knob"),
        ({"B": []}, "knobs.space.B must be a non-empty list"),
        ({"B": "abc"}, "knobs.space.B must be a non-empty list"),
        ({"B": [1, 1]}, "twice"),
        ({"B": [[1]]}, "not a number"),
    ],
)
def test_bad_spaces_are_rejected_with_the_knob_named(space: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KnobSpace("k.json", space)


def test_default_reads_the_file_and_keeps_other_keys(tmp_path: Path) -> None:
    space = KnobSpace("ir/k.json", SPACE)
    assert space.default(tmp_path) == {"BLOCK": 8, "ORDER": "ij"}
    (tmp_path / "ir").mkdir()
    (tmp_path / "ir" / "k.json").write_text('{"BLOCK": 64, "unroll": 2}')
    assert space.default(tmp_path) == {"BLOCK": 64, "ORDER": "ij", "unroll": 2}
    (tmp_path / "ir" / "k.json").write_text('{"BLOCK": 64,\n}')
    with pytest.raises(ValueError, match=r"k\.json: invalid JSON at line 2"):
        space.default(tmp_path)
    (tmp_path / "ir" / "k.json").write_text("[1]")
    with pytest.raises(ValueError, match="JSON object"):
        space.default(tmp_path)


def test_render_is_sorted_json_with_a_trailing_newline() -> None:
    text = KnobSpace("k.json", SPACE).render({"ORDER": "ji", "BLOCK": 32})
    assert text == '{\n  "BLOCK": 32,\n  "ORDER": "ji"\n}\n'
    assert json.loads(text) == {"BLOCK": 32, "ORDER": "ji"}


def test_sweep_changes_one_knob_at_a_time_nearest_first() -> None:
    current = {"BLOCK": 32, "ORDER": "ij"}
    sweep = SweepProposer(KnobSpace("k.json", SPACE), current)
    got = [c.knobs for c in drain(sweep)]
    singles = [
        {"BLOCK": 16, "ORDER": "ij"},
        {"BLOCK": 64, "ORDER": "ij"},
        {"BLOCK": 32, "ORDER": "ji"},
        {"BLOCK": 8, "ORDER": "ij"},
        {"BLOCK": 128, "ORDER": "ij"},
    ]
    assert got[:5] == singles
    # then combinations, closest to the centre first
    assert got[5:7] == [{"BLOCK": 16, "ORDER": "ji"}, {"BLOCK": 64, "ORDER": "ji"}]
    assert {json.dumps(k, sort_keys=True) for k in got[7:]} == {
        json.dumps({"BLOCK": b, "ORDER": "ji"}, sort_keys=True) for b in (8, 128)
    }
    assert len(got) == 9 and current not in got


def test_sweep_candidates_carry_file_text_hypothesis_and_signature() -> None:
    space = KnobSpace("ir/k.json", SPACE)
    first = SweepProposer(space, {"BLOCK": 32, "ORDER": "ij", "unroll": 2}).propose(state())
    assert first is not None and len(first) == 1
    c = first[0]
    assert c.kind == "knob"
    assert c.hypothesis == "BLOCK 32 -> 16"
    assert c.knobs == {"BLOCK": 16, "ORDER": "ij", "unroll": 2}
    assert json.loads(c.files["ir/k.json"]) == c.knobs
    assert c.signature == signature_of(c.knobs)


def test_sweep_skips_tried_and_returns_none_when_exhausted() -> None:
    space = KnobSpace("k.json", SPACE)
    sweep = SweepProposer(space, {"BLOCK": 32, "ORDER": "ij"})
    tried = {signature_of({"BLOCK": 16, "ORDER": "ij"}), signature_of({"BLOCK": 64, "ORDER": "ij"})}
    got = sweep.propose(state(tried))
    assert got is not None and got[0].knobs == {"BLOCK": 32, "ORDER": "ji"}
    everything = {signature_of(a) for a in space}
    assert SweepProposer(space, {"BLOCK": 32, "ORDER": "ij"}).propose(state(everything)) is None


def test_sweep_batches_never_repeat() -> None:
    got = drain(SweepProposer(KnobSpace("k.json", SPACE), {"BLOCK": 8, "ORDER": "ij"}), batch=4)
    assert len(got) == 9 and len({c.signature for c in got}) == 9


def test_sweep_recentres_on_the_new_best() -> None:
    space = KnobSpace("k.json", SPACE)
    sweep = SweepProposer(space, {"BLOCK": 32, "ORDER": "ij"})
    first = sweep.propose(state())
    assert first is not None and first[0].knobs == {"BLOCK": 16, "ORDER": "ij"}
    best = {"BLOCK": 128, "ORDER": "ij"}
    sweep.observe([Observation(attempt=1, kind="knob", verdict="keep", metric=1.0, knobs=best)])
    tried = {first[0].signature, signature_of({"BLOCK": 32, "ORDER": "ij"})}
    nxt = sweep.propose(state(tried))
    assert nxt is not None
    assert nxt[0].knobs == {"BLOCK": 64, "ORDER": "ij"}
    assert nxt[0].hypothesis == "BLOCK 128 -> 64"
    # the loop's own notion of best wins as well
    other = SweepProposer(space, {"BLOCK": 32, "ORDER": "ij"}).propose(state(best=best))
    assert other is not None and other[0].knobs == {"BLOCK": 64, "ORDER": "ij"}


def test_sweep_from_an_off_grid_value_tries_numerically_nearest_first() -> None:
    sweep = SweepProposer(KnobSpace("k.json", SPACE), {"BLOCK": 50, "ORDER": "ij"})
    got = [c.knobs["BLOCK"] for c in drain(sweep)[:6]]
    assert got[:2] == [64, 32]


def test_random_is_reproducible_without_repeats_and_exhausts() -> None:
    space = KnobSpace("k.json", SPACE)
    a = [c.knobs for c in drain(RandomProposer(space, seed=7))]
    b = [c.knobs for c in drain(RandomProposer(space, seed=7))]
    c = [c.knobs for c in drain(RandomProposer(space, seed=8))]
    assert a == b
    assert a != c
    assert len(a) == 10 and {json.dumps(k, sort_keys=True) for k in a} == {
        json.dumps(k, sort_keys=True) for k in space
    }


def test_random_skips_tried_and_the_current_assignment() -> None:
    space = KnobSpace("k.json", SPACE)
    current = {"BLOCK": 32, "ORDER": "ij"}
    tried = {signature_of({"BLOCK": 8, "ORDER": "ji"})}
    proposer = RandomProposer(space, seed=1, current=current)
    got = []
    while (batch := proposer.propose(state(tried, batch=3))) is not None:
        got.extend(c.knobs for c in batch)
    assert len(got) == 8
    assert current not in got and {"BLOCK": 8, "ORDER": "ji"} not in got


def test_random_scales_to_spaces_too_large_to_list() -> None:
    space = KnobSpace("k.json", {f"K{i}": list(range(10)) for i in range(12)})
    got = RandomProposer(space, seed=3).propose(state(batch=5))
    assert got is not None and len({c.signature for c in got}) == 5


@pytest.mark.parametrize(
    "make",
    [
        lambda space, current: SweepProposer(space, current),
        lambda space, current: RandomProposer(space, seed=5, current=current),
    ],
    ids=["sweep", "random"],
)
def test_knob_space_proposers_cover_the_space_around_the_current_state(
    make: Callable[[KnobSpace, dict], Proposer],
) -> None:
    """Every other state once, keeping keys outside the space (the shared contract is in
    test_proposer_contract.py)."""
    space = KnobSpace("ir/k.json", {"A": [1, 2, 3], "B": ["x", "y"], "C": [True, False]})
    current = {"A": 2, "B": "x", "C": True, "keep": "me"}
    proposer = make(space, current)
    seen: list = []
    tried = {signature_of(current)}
    while (batch := proposer.propose(state(tried, batch=2))) is not None:
        assert 1 <= len(batch) <= 2
        for c in batch:
            assert c.kind == "knob" and c.signature not in tried
            assert json.loads(c.files["ir/k.json"]) == c.knobs
            assert c.knobs["keep"] == "me" and c.hypothesis
            tried.add(c.signature)
            seen.append(c)
        proposer.observe([])
    assert len(seen) == space.size - 1
    assert proposer.propose(state(tried)) is None
