"""Every `kernelopt` command (an agent calls `try` and `status` after each edit)
starts without loading the heavy libraries only some commands need."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "paramiko")


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(proc.stdout.split())


def test_the_cli_starts_without_pandas_matplotlib_or_paramiko() -> None:
    loaded = _loaded_after("import kernelopt.cli")
    assert "kernelopt.loop" in loaded  # the probe sees what the CLI imports
    assert not loaded & set(HEAVY)


def test_the_packages_still_give_their_names_on_first_use() -> None:
    loaded = _loaded_after(
        "from kernelopt.report import report_for_run\nfrom kernelopt.hosts import SSHHost"
    )
    assert {"matplotlib", "paramiko"} <= loaded
