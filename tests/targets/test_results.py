import json
import os
from pathlib import Path

import pytest

from kernelopt.targets.results import (
    ResultsError,
    class_key,
    classes_of,
    metric_values,
    newest_fresh,
    parse_stdout,
    read_csv,
    read_json,
    rows_from_json,
    snapshot,
)


def test_csv_rows_are_plain_json_safe_values(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("n,time_us,err,name\n256,10.5,0,a\n512,20,,b\n")
    rows = read_csv(path)
    assert rows == (
        {"n": 256, "time_us": 10.5, "err": 0.0, "name": "a"},
        {"n": 512, "time_us": 20.0, "err": None, "name": "b"},
    )
    assert type(rows[0]["n"]) is int
    json.dumps(rows, allow_nan=False)


def test_csv_tolerates_spaces_after_commas_and_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_bytes("\ufeffn, time_us , err\n256, 10.5, 0\n".encode())
    assert read_csv(path) == ({"n": 256, "time_us": 10.5, "err": 0},)


@pytest.mark.parametrize(("text", "message"), [("", "empty"), ("n,time_us\n", "no rows")])
def test_csv_without_rows_is_an_error_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(ResultsError, match=message) as info:
        read_csv(path)
    assert "r.csv" in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        [{"n": 1, "t": 2.0}, {"n": 2, "t": 4.0}],
        {"rows": [{"n": 1, "t": 2.0}, {"n": 2, "t": 4.0}], "meta": "x"},
        {"results": [{"n": 1, "t": 2.0}, {"n": 2, "t": 4.0}]},
    ],
)
def test_json_row_lists_in_every_accepted_shape(data: object) -> None:
    assert rows_from_json(data, "r.json") == ({"n": 1, "t": 2.0}, {"n": 2, "t": 4.0})


def test_one_flat_json_object_is_one_row() -> None:
    assert rows_from_json({"t": 3, "err": 0}, "r.json") == ({"t": 3, "err": 0},)


@pytest.mark.parametrize(
    ("data", "message"),
    [([], "no rows"), ([1, 2], "row 0 is a int"), ("text", "got str")],
)
def test_bad_json_shapes_are_explained(data: object, message: str) -> None:
    with pytest.raises(ResultsError, match=message):
        rows_from_json(data, "r.json")


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('[\n{"t": 1},\n{"t": }\n]')
    with pytest.raises(ResultsError, match=r"r\.json: invalid JSON at line 3"):
        read_json(path)


def test_stdout_key_values_parse_numbers_and_keep_the_last() -> None:
    text = "compiling...\ntime_us: 12\nnote: warm: up\nerr: 1e-3\ntime_us: 11.5\nok: true\n"
    assert parse_stdout(text) == ({"time_us": 11.5, "note": "warm: up", "err": 0.001, "ok": True},)


def test_stdout_without_key_values_is_an_error() -> None:
    with pytest.raises(ResultsError, match="no 'key: value'"):
        parse_stdout("hello\nworld\n")


def test_fresh_file_wins_over_stale_even_when_stale_is_newer_named(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    stale = tmp_path / "out" / "z.csv"
    stale.write_text("t\n1\n")
    before = snapshot(tmp_path, "out/*.csv")
    fresh = tmp_path / "out" / "a.csv"
    fresh.write_text("t\n2\n")
    assert newest_fresh(tmp_path, "out/*.csv", before) == fresh


def test_rewritten_file_counts_as_fresh(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("t\n1\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = snapshot(tmp_path, "*.csv")
    path.write_text("t\n2\n")
    assert newest_fresh(tmp_path, "*.csv", before) == path


def test_only_stale_files_is_an_error_listing_them(tmp_path: Path) -> None:
    (tmp_path / "old.csv").write_text("t\n1\n")
    before = snapshot(tmp_path, "*.csv")
    with pytest.raises(ResultsError, match=r"no results file matching '\*\.csv'.*old\.csv"):
        newest_fresh(tmp_path, "*.csv", before)


def test_newest_of_several_fresh_files(tmp_path: Path) -> None:
    before = snapshot(tmp_path, "*.json")
    older, newer = tmp_path / "b.json", tmp_path / "a.json"
    older.write_text("{}")
    newer.write_text("{}")
    os.utime(older, ns=(10**18, 10**18))
    os.utime(newer, ns=(2 * 10**18, 2 * 10**18))
    assert newest_fresh(tmp_path, "*.json", before) == newer


def test_metric_values_reject_missing_and_non_numbers() -> None:
    assert metric_values([{"t": 1}, {"t": 2.5}], "t", "r.csv") == [1.0, 2.5]
    with pytest.raises(ResultsError, match=r"metric 'time' not found \(columns: n, t\)"):
        metric_values([{"t": 1, "n": 2}], "time", "r.csv")
    with pytest.raises(ResultsError, match="row 1 has t=None"):
        metric_values([{"t": 1}, {"t": None}], "t", "r.csv")
    with pytest.raises(ResultsError, match="row 0 has t='fast'"):
        metric_values([{"t": "fast"}], "t", "r.csv")


def test_classes_group_rows_by_config_columns_in_declared_order() -> None:
    rows = [
        {"n": 4096, "block": 64, "t": 10.0},
        {"n": 4096, "block": 64, "t": 14.0},
        {"n": 4096, "block": 128, "t": 7.0},
        {"n": 1024, "block": 64.0, "t": 3.0},
    ]
    classes = classes_of(rows, ["block", "n"], "t")
    assert classes == {
        "block=64,n=4096": {"mean": 12.0, "count": 2},
        "block=128,n=4096": {"mean": 7.0, "count": 1},
        "block=64,n=1024": {"mean": 3.0, "count": 1},
    }
    assert class_key({"n": 1, "mode": "fast"}, ["mode", "n"]) == "mode=fast,n=1"


def test_classes_need_their_columns() -> None:
    assert classes_of([{"t": 1}], [], "t") == {}
    with pytest.raises(ResultsError, match="config column.*head_size"):
        classes_of([{"t": 1, "n": 2}], ["n", "head_size"], "t")
