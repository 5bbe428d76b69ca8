import json
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from benchmarks_support.processes import alive

from kernelopt.measurement import FAILED, INCORRECT, OK, TIMEOUT
from kernelopt.targets.command import (
    CommandRun,
    CommandTarget,
    ResultsSpec,
    host_runner,
    run_local,
)

CSV = ResultsSpec("csv", "results/*.csv")


def target(command: str, **kw: object) -> CommandTarget:
    options: dict = {"metric": "time_us", "better": "lower", "results": CSV}
    options.update(kw)
    return CommandTarget(command=command, **options)


def write_csv(text: str, name: str = "bench.csv") -> str:
    return f"mkdir -p results && printf '{text}' > results/{name}"


def wait_dead(pid: int, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_csv_rows_metric_mean_and_classes(tmp_path: Path) -> None:
    rows = "n,block,time_us,err\\n256,8,10,0\\n256,16,20,0\\n512,8,60,0\\n"
    m = target(write_csv(rows), correct="err == 0", config_columns=("n",)).measure(tmp_path)
    assert m.status == OK, m.error
    assert m.metrics == {"time_us": 30.0}
    assert m.rows[2] == {"n": 512, "block": 8, "time_us": 60, "err": 0}
    assert m.extra["classes"] == {"n=256": 15.0, "n=512": 60.0}
    assert m.extra["class_rows"] == {"n=256": 2, "n=512": 1}
    assert m.extra["results_file"] == "results/bench.csv"
    assert m.duration_s > 0
    json.dumps(m.to_json(), allow_nan=False)


def test_stale_csv_from_an_earlier_run_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "old.csv").write_text("time_us\n1\n")
    m = target("echo ran").measure(tmp_path)
    assert m.status == FAILED
    assert "no results file" in m.error and "old.csv" in m.error
    m = target(write_csv("time_us\\n7\\n", "new.csv")).measure(tmp_path)
    assert m.status == OK and m.metrics == {"time_us": 7.0}


def test_json_results(tmp_path: Path) -> None:
    payload = json.dumps({"results": [{"cfg": "a", "gflops": 5}, {"cfg": "b", "gflops": 7}]})
    command = f"printf '%s' {json.dumps(payload)} > out.json"
    spec = ResultsSpec("json", "out.json")
    m = target(command, metric="gflops", better="higher", results=spec).measure(tmp_path)
    assert m.status == OK, m.error
    assert m.metrics == {"gflops": 6.0}
    assert [r["cfg"] for r in m.rows] == ["a", "b"]


def test_stdout_results_and_extra_env(tmp_path: Path) -> None:
    command = 'echo "warming up"; echo "time_us: $FIRST"; echo "time_us: $SECOND"; echo "err: 0"'
    t = target(command, results=ResultsSpec("stdout"), correct="err == 0", env={"FIRST": "9"})
    m = t.measure(tmp_path, env={"SECOND": "4.5"})
    assert m.status == OK, m.error
    assert m.metrics == {"time_us": 4.5}
    assert m.rows == ({"time_us": 4.5, "err": 0},)


def test_false_correctness_names_the_failing_configs(tmp_path: Path) -> None:
    rows = "n,head,time_us,err\\n256,64,10,0\\n512,64,20,0.5\\n1024,128,30,2\\n"
    t = target(write_csv(rows), correct="err < 1e-6", config_columns=("n", "head"))
    m = t.measure(tmp_path)
    assert m.status == INCORRECT
    assert "failed on 2 of 3 rows" in m.error
    assert "n=512,head=64 (err=0.5)" in m.error and "n=1024,head=128 (err=2.0)" in m.error
    assert "n=256" not in m.error
    assert len(m.rows) == 3 and m.metrics == {}


def test_correctness_on_an_unknown_column_is_a_failure(tmp_path: Path) -> None:
    m = target(write_csv("time_us\\n1\\n"), correct="err_ps == 0").measure(tmp_path)
    assert m.status == FAILED
    assert "err_ps" in m.error and "columns: time_us" in m.error


def test_non_zero_exit_is_a_failure_with_the_log_tail(tmp_path: Path) -> None:
    m = target("for i in $(seq 1 100); do echo line $i; done; echo boom >&2; exit 3").measure(
        tmp_path
    )
    assert m.status == FAILED
    assert "exited with status 3" in m.error
    lines = m.log_tail.splitlines()
    assert len(lines) == 40 and lines[-1] == "boom" and lines[0] == "line 62"


def test_missing_metric_names_the_columns(tmp_path: Path) -> None:
    m = target(write_csv("n,us\\n1,2\\n")).measure(tmp_path)
    assert m.status == FAILED
    assert "metric 'time_us' not found (columns: n, us)" in m.error
    assert "results/bench.csv" in m.error


def test_unparsable_stdout_is_a_failure(tmp_path: Path) -> None:
    m = target("echo nothing useful", results=ResultsSpec("stdout")).measure(tmp_path)
    assert m.status == FAILED and "key: value" in m.error
    assert m.log_tail == "nothing useful"


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The child ignores SIGTERM and would outlive its parent.
    command = "bash -c 'trap \"\" TERM; sleep 30' & echo $! > child.pid; sleep 30"
    start = time.monotonic()
    m = target(command, timeout_s=0.5).measure(tmp_path)
    assert m.status == TIMEOUT
    assert "timed out after 0.5 s" in m.error
    assert time.monotonic() - start < 10
    child = int((tmp_path / "child.pid").read_text())
    assert wait_dead(child), f"child {child} survived the timeout"


def test_background_stragglers_do_not_outlive_a_finished_run(tmp_path: Path) -> None:
    command = "sleep 30 & echo $! > child.pid; echo 'time_us: 3'"
    m = target(command, results=ResultsSpec("stdout")).measure(tmp_path)
    assert m.status == OK
    assert m.duration_s < 10
    assert wait_dead(int((tmp_path / "child.pid").read_text()))


def test_runner_receives_command_tree_extra_env_and_timeout(tmp_path: Path) -> None:
    seen: list[tuple] = []

    def runner(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float) -> CommandRun:
        seen.append((command, cwd, dict(env), timeout_s))
        return CommandRun(returncode=0, output="time_us: 2\n", duration_s=0.1)

    t = target("bench", results=ResultsSpec("stdout"), env={"A": "1"}, timeout_s=5)
    m = t.measure(tmp_path, env={"B": "2"}, runner=runner)
    assert m.status == OK and m.metrics == {"time_us": 2.0}
    assert seen == [("bench", tmp_path, {"A": "1", "B": "2"}, 5)]


def test_values_with_shell_characters_reach_the_command_intact(tmp_path: Path) -> None:
    run = run_local('printf "%s" "$TRICKY"', tmp_path, {"TRICKY": "a'b; $(echo no)"}, 5)
    assert run.returncode == 0 and run.output == "a'b; $(echo no)"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"better": "faster"}, "better must be"),
        ({"correct": "__import__('os')"}, "correct:"),
        ({"timeout_s": 0}, "timeout must be positive"),
        ({"metric": ""}, "metric"),
    ],
)
def test_bad_target_settings_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        target("true", **kwargs)


@pytest.mark.parametrize(
    ("fmt", "path", "message"),
    [
        ("xml", None, "results.format"),
        ("csv", None, "results.path is required"),
        ("json", "../outside.json", "inside the tree"),
    ],
)
def test_bad_results_specs_are_rejected(fmt: str, path: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ResultsSpec(fmt, path)


def test_a_tree_that_does_not_exist_is_a_failure_not_an_exception(tmp_path: Path) -> None:
    m = target("true").measure(tmp_path / "missing")
    assert m.status == FAILED and "could not run" in m.error and "missing" in m.error


def test_host_runner_measures_through_a_local_host(tmp_path: Path) -> None:
    from kernelopt.hosts import LocalHost

    rows = "n,time_us\\n1,4\\n2,8\\n"
    t = target(write_csv(rows) + '; echo "done $WHO"', env={"WHO": "me"})
    m = t.measure(tmp_path, runner=host_runner(LocalHost()))
    assert m.status == OK, m.error
    assert m.metrics == {"time_us": 6.0} and m.log_tail == "done me"
    m = target("sleep 5", timeout_s=0.3).measure(tmp_path, runner=host_runner(LocalHost()))
    assert m.status == TIMEOUT


def test_a_host_whose_transport_fails_gives_a_failed_measurement(tmp_path: Path) -> None:
    class Unreachable:
        def run(self, argv: object, **kw: object) -> None:
            raise RuntimeError("host gym-9: connection refused")

    m = target("true").measure(tmp_path, runner=host_runner(Unreachable()))
    assert m.status == FAILED and "connection refused" in m.error


def test_a_crash_by_signal_is_named(tmp_path: Path) -> None:
    m = target("echo partial; kill -SEGV $$").measure(tmp_path)
    assert m.status == FAILED
    assert m.error.startswith("command was killed by SIGSEGV")
    assert m.log_tail == "partial"
