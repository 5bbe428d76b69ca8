"""Hostile strings in argv, env values and paths are data, never shell code."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelopt.hosts import Host

# Shell metacharacters, quotes and whitespace, plus a canary command that would
# create a file if any string were ever interpreted by a shell.
PIECES = st.sampled_from(
    [
        "'",
        '"',
        ";",
        "$(",
        ")",
        "`",
        "\\",
        " ",
        "\n",
        "\t",
        "&",
        "|",
        ">",
        "<",
        "*",
        "$",
        "{",
        "}",
        "!",
        "#",
        "~",
        "-",
        "%",
        "touch CANARY",
        "$(touch CANARY)",
        "`touch CANARY`",
        "'; touch CANARY; '",
    ]
)
HOSTILE = st.lists(st.one_of(PIECES, st.text("abc xyz", max_size=3)), max_size=8).map("".join)
SETTINGS = settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _name(text: str) -> str:
    """A file name from hostile text ('/' and NUL are the only bytes a name cannot hold)."""
    return ("f" + text.replace("/", "_"))[:200]


@SETTINGS
@given(value=HOSTILE)
def test_argv_element_arrives_verbatim(host: Host, scratch: str, value: str) -> None:
    result = host.run(["printf", "%s", value], cwd=scratch)
    assert result.stdout == value
    assert host.run(["ls", "-A", scratch]).stdout == ""


@SETTINGS
@given(value=HOSTILE)
def test_env_value_arrives_verbatim(host: Host, scratch: str, value: str) -> None:
    result = host.run(["sh", "-c", 'printf "%s" "$HOSTILE"'], env={"HOSTILE": value}, cwd=scratch)
    assert result.stdout == value
    assert host.run(["ls", "-A", scratch]).stdout == ""


@SETTINGS
@given(value=HOSTILE)
def test_hostile_paths_and_cwd_are_plain_names(host: Host, scratch: str, value: str) -> None:
    directory = f"{scratch}/{_name(value)}"
    assert host.run(["mkdir", "--", directory]).ok
    host.put_bytes(value.encode(), f"{directory}/{_name(value)}")
    assert host.get_bytes(f"{directory}/{_name(value)}") == value.encode()
    assert host.run(["pwd"], cwd=directory).stdout == directory + "\n"
    host.remove_tree(directory)
    assert host.run(["ls", "-A", scratch]).stdout == ""
    assert not Path("CANARY").exists()
