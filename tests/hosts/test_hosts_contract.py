"""The Host contract, run against LocalHost and SSHHost (loopback sshd)."""

from __future__ import annotations

import random
import time

import pytest

from kernelopt.hosts import Host, HostError


def test_list_argv_runs_without_a_shell_reading_it(host: Host) -> None:
    result = host.run(["printf", "%s|", "a b", "$HOME", "*", ""])
    assert result.ok and result.stdout == "a b|$HOME|*||"
    assert result.duration_s >= 0 and not result.timed_out


def test_string_is_a_shell_command_line(host: Host) -> None:
    result = host.run("echo one && echo two >&2; exit 3")
    assert result.returncode == 3 and result.stdout == "one\n" and result.stderr == "two\n"
    assert not result.ok


def test_env_adds_to_the_environment_and_cwd_applies(host: Host, scratch: str) -> None:
    result = host.run(
        'printf "%s %s %s" "$KO_A" "$(pwd)" "${PATH:+path-kept}"',
        env={"KO_A": "x y"},
        cwd=scratch,
    )
    assert result.stdout == f"x y {scratch} path-kept"


def test_stdin_bytes_reach_the_command(host: Host) -> None:
    assert host.run(["wc", "-c"], stdin=b"12345").stdout.strip() == "5"


def test_missing_program_and_missing_cwd_are_results(host: Host) -> None:
    assert host.run(["kernelopt-no-such-program"]).returncode == 127
    missing = host.run(["true"], cwd="/nonexistent/kernelopt")
    assert missing.returncode != 0 and not missing.timed_out


def test_timeout_kills_the_whole_process_group(host: Host, scratch: str) -> None:
    # A background child with a command line no other process has; the shell
    # says it started it before waiting on it.
    unique = f"{30 + random.random():.9f}"
    started = time.monotonic()
    result = host.run(["sh", "-c", f"sleep {unique} & echo started; wait"], timeout=2.0)
    assert result.timed_out and not result.ok
    assert result.stdout == "started\n"
    assert time.monotonic() - started < 10
    # The child was in the group: it is gone (the kill is asynchronous, so look a
    # few times). "[.]" keeps the pattern from matching the shell that runs pgrep.
    pattern = f"sleep {unique.replace('.', '[.]')}"
    for _ in range(100):
        if host.run(["pgrep", "-f", pattern]).returncode == 1:
            break
        time.sleep(0.05)
    assert host.run(["pgrep", "-f", pattern]).returncode == 1, "the child survived"


def test_output_before_a_timeout_is_kept(host: Host) -> None:
    result = host.run(["sh", "-c", "echo early; sleep 30"], timeout=0.3)
    assert result.timed_out and result.stdout == "early\n"


def test_files_round_trip(host: Host, scratch: str) -> None:
    data = bytes(range(256)) * 100
    host.put_bytes(data, f"{scratch}/blob")
    assert host.get_bytes(f"{scratch}/blob") == data
    assert host.run(["wc", "-c", f"{scratch}/blob"]).stdout.split()[0] == str(len(data))


def test_missing_file_is_a_host_error_naming_the_path(host: Host) -> None:
    with pytest.raises(HostError, match="/nonexistent/kernelopt/file"):
        host.get_bytes("/nonexistent/kernelopt/file")
    with pytest.raises(HostError, match="/nonexistent/kernelopt/out"):
        host.put_bytes(b"x", "/nonexistent/kernelopt/out")


def test_mkdtemp_and_remove_tree(host: Host) -> None:
    first, second = host.mkdtemp(prefix="ko-test-"), host.mkdtemp(prefix="ko-test-")
    assert first != second and "ko-test-" in first
    host.put_bytes(b"x", f"{first}/f")
    host.run(["mkdir", "-p", f"{first}/a/b"])
    host.remove_tree(first)
    host.remove_tree(second)
    assert host.run(["test", "-e", first]).returncode == 1
    host.remove_tree(first)  # removing what is gone is fine


def test_bad_env_name_is_refused(host: Host) -> None:
    with pytest.raises(ValueError, match="invalid environment variable name"):
        host.run(["true"], env={"A;B": "x"})


def test_large_output_is_complete(host: Host) -> None:
    result = host.run(["sh", "-c", "seq 1 200000; seq 1 50000 >&2"])
    assert result.stdout.splitlines()[-1] == "200000" and len(result.stdout.splitlines()) == 200000
    assert result.stderr.splitlines()[-1] == "50000"
