"""summary-json: one-key unwrap, the unit of *_percent decided per tool, negatives dropped."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelopt.neuron.facts import PEAK_BF16_FLOPS_PER_CORE, peak_flops
from kernelopt.neuron.summary import (
    SummaryError,
    convert_fields,
    mfu_percent,
    parse_summary,
    percent_unit,
    unit_and_warning,
    unit_cross_check,
    unwrap_summary,
)


def test_fraction_becomes_percent_and_negative_is_missing() -> None:
    text = json.dumps(
        {
            "kernel_3f9a": {
                "mfu_estimated_percent": 0.873,
                "mfu_max_achievable_estimated_percent": 0.97,
                "mbu_estimated_percent": -1,
                "dma_active_time_percent": 1,
                "total_time": 0.00021,
                "spill_save_bytes": -1,
                "hbm_read_bytes": 1048576,
                "instance_type": "trn2.48xlarge",
            }
        }
    )
    profile = parse_summary(text, tool="neuron-profile")
    assert profile["mfu_estimated_percent"] == pytest.approx(87.3)
    assert profile["dma_active_time_percent"] == pytest.approx(100.0)
    assert "mbu_estimated_percent" not in profile
    assert "spill_save_bytes" not in profile
    assert profile["hbm_read_bytes"] == 1048576 and isinstance(profile["hbm_read_bytes"], int)
    assert profile["total_time"] == pytest.approx(0.00021)
    assert profile["instance_type"] == "trn2.48xlarge"
    assert profile["roofline_efficiency"] == pytest.approx(100 * 0.873 / 0.97)


def test_unknown_top_level_key_is_unwrapped_whatever_its_name() -> None:
    flat = {"total_time": 1.0}
    assert unwrap_summary({"some-new-name.neff": flat}) == flat
    assert unwrap_summary(flat) == flat  # a flat dict is accepted as it is


def test_several_nested_keys_are_refused_with_the_keys_named() -> None:
    with pytest.raises(SummaryError, match="a, b"):
        unwrap_summary({"a": {"x": 1}, "b": {"y": 2}})


def test_not_json_names_the_source_and_the_start_of_the_output() -> None:
    with pytest.raises(SummaryError, match="view of k.neff.*Error: no NTFF"):
        parse_summary("Error: no NTFF\n", source="view of k.neff", tool="neuron-profile")


def test_the_unit_is_the_tools_not_the_values() -> None:
    # Below 1 % read in percent stays below 1 %: no hundredfold inflation.
    small = json.dumps({"k": {"mfu_estimated_percent": 0.5, "dma_active_time_percent": 37.5}})
    assert convert_fields(json.loads(small)["k"], "percent")["mfu_estimated_percent"] == 0.5
    # The same 0.5 from either profiler is a fraction: 50 %.
    fraction = json.dumps({"k": {"mfu_estimated_percent": 0.5}})
    for tool in ("neuron-profile", "neuron-explorer"):
        assert parse_summary(fraction, tool=tool, version="2.30.1")["mfu_estimated_percent"] == 50
    assert percent_unit("/opt/aws/neuron/bin/neuron-profile", "2.26.0") == "fraction"


def test_explorer_reads_the_public_run_logs_summary_as_it_was_meant() -> None:
    # The public Trn2 run log (Neuron 2.30): active time / total time = the _percent value,
    # so these are fractions; read as percent they would say 0.18 % for 18 %.
    logged = {
        "total_time": 3.132167956813,
        "tensor_engine_active_time": 0.565739726504,
        "tensor_engine_active_time_percent": 0.1806224105171051,
        "vector_engine_active_time": 0.492130449926,
        "vector_engine_active_time_percent": 0.15712134748570308,
        "mfu_estimated_percent": 0.06277731969607976,
    }
    profile = parse_summary(json.dumps({"h": logged}), tool="neuron-explorer", version="2.30.0")
    for engine in ("tensor", "vector"):
        share = 100 * logged[f"{engine}_engine_active_time"] / logged["total_time"]
        assert profile[f"{engine}_engine_active_time_percent"] == pytest.approx(share, rel=1e-6)
    assert profile["mfu_estimated_percent"] == pytest.approx(6.2777, rel=1e-4)


def test_a_value_outside_the_tools_unit_is_an_error_naming_the_field() -> None:
    with pytest.raises(SummaryError, match="dma_active_time_percent is 37.5.*fraction"):
        parse_summary(json.dumps({"k": {"dma_active_time_percent": 37.5}}), tool="neuron-profile")
    with pytest.raises(SummaryError, match="no known unit.*'neuron-top'"):
        parse_summary("{}", tool="neuron-top")


def test_nan_is_dropped() -> None:
    converted = convert_fields(
        {"hfu_estimated_percent": 42.0, "mbu_estimated_percent": "nan"}, "percent"
    )
    assert converted == {"hfu_estimated_percent": 42.0}


def test_missing_ceiling_gives_no_roofline_efficiency() -> None:
    profile = parse_summary(
        json.dumps({"k": {"mfu_estimated_percent": 0.5}}), tool="neuron-profile"
    )
    assert "roofline_efficiency" not in profile


def test_mfu_from_macs_and_time_at_the_trn2_peak() -> None:
    # The published 2048^3 bf16 result: 89.47 % at 0.2442 ms fits 78.64e12, not 79e12.
    assert PEAK_BF16_FLOPS_PER_CORE == 78.64e12 and peak_flops(2) == 2 * 78.64e12
    assert mfu_percent(2048**3, 0.2442e-3, peak_flops(1)) == pytest.approx(89.47, abs=0.01)
    assert mfu_percent(2048**3, 0.2442e-3, 79e12) == pytest.approx(89.06, abs=0.01)
    assert mfu_percent(0, 1.0, peak_flops(1)) is None
    assert mfu_percent(10, 0.0, peak_flops(1)) is None


@given(
    fraction=st.floats(min_value=0.0, max_value=1.0),
    missing=st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False),
    count=st.integers(min_value=0, max_value=2**40),
)
def test_conversion_is_once_and_total(fraction: float, missing: float, count: int) -> None:
    flat = {
        "tensor_engine_active_time_percent": fraction,
        "dma_active_time_percent": missing,
        "dma_transfer_count": count,
    }
    converted = convert_fields(flat, "fraction")
    assert converted["tensor_engine_active_time_percent"] == pytest.approx(100 * fraction)
    assert "dma_active_time_percent" not in converted
    assert converted["dma_transfer_count"] == count
    # Read as percent, the converted record is unchanged: the unit is applied once.
    assert convert_fields(converted, "percent") == converted


def test_the_unit_is_looked_up_per_tool_and_version_with_a_warning_off_the_record() -> None:
    # On record: neuron-explorer in fractions from Neuron 2.30; neuron-profile throughout.
    assert unit_and_warning("neuron-explorer", "2.31.4.0") == ("fraction", None)
    assert unit_and_warning("neuron-explorer", "2.30.0.0") == ("fraction", None)
    assert unit_and_warning("neuron-profile", "2.22.0.0") == ("fraction", None)
    # Explorer 2.27-2.29 and an unknown version: the unit on record, and a warning.
    for version in ("2.28.0.0", None, "unknown"):
        unit, warning = unit_and_warning("neuron-explorer", version)
        assert unit == "fraction" and warning and "no public record" in warning
        assert "run log" in warning
    warnings: list[str] = []
    text = json.dumps({"k": {"mfu_estimated_percent": 0.4}})
    parsed = parse_summary(text, tool="neuron-explorer", version="2.29.0", warnings=warnings)
    assert parsed["mfu_estimated_percent"] == 40.0
    assert len(warnings) == 1 and "neuron-explorer version 2.29.0" in warnings[0]
    parse_summary(text, tool="neuron-explorer", version="2.29.0", warnings=warnings)
    assert len(warnings) == 1  # the same warning once


def test_the_profilers_mfu_a_hundredfold_off_the_device_time_mfu_is_a_unit_warning() -> None:
    # Agreeing within the expected spread (one traced run vs the minimum): no warning.
    assert unit_cross_check(38.0, 40.0, "neuron-explorer", "2.32.0") is None
    assert unit_cross_check(None, 40.0, "neuron-explorer", "2.32.0") is None
    # A release printing percent, read as fractions: 100x too large.
    high = unit_cross_check(3980.0, 40.0, "neuron-explorer", "2.35.0")
    assert high and "99.5 times" in high and "not in fraction" in high
    assert "neuron-explorer 2.35.0" in high and "not rescaled" in high
    # A fraction read as percent: 100x too small.
    low = unit_cross_check(0.398, 40.0, "/opt/aws/neuron/bin/neuron-profile", "2.26.0")
    assert low and "0.00995 times" in low and "not in fraction" in low
    # Far apart but not near 100: said, without blaming the unit.
    odd = unit_cross_check(4.0, 80.0, "neuron-explorer", "2.32.0")
    assert odd and "0.05 times" in odd and "unit" not in odd
