"""Whole runs through the idle-device gate and hosts: fake device tools, a real loopback sshd."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


fake_tools = _load("kernelopt_gated_fake_tools", HERE.parent / "devices" / "fake_tools.py")
sys.path.insert(0, str(HERE.parent / "hosts"))
sshd_server = _load("kernelopt_gated_sshd", HERE.parent / "hosts" / "sshd_server.py")

# The benchmark reports which device it was bound to and where it ran. With
# BENCH_PEERS (a folder) and BENCH_MEET (a count), the first candidate run to
# arrive (BEST, whose X is BENCH_SOLO, runs alone) waits, up to 20 s, until
# that many runs have arrived, and writes whether they met to
# BENCH_PEERS.met: a barrier only runs measured at once can pass.
BENCH = """
import json, os, socket, time
k = json.load(open("knobs.json"))
peers, meet = os.environ.get("BENCH_PEERS"), int(os.environ.get("BENCH_MEET", "0"))
if peers and str(k["X"]) != os.environ.get("BENCH_SOLO"):
    os.makedirs(peers, exist_ok=True)
    first = not os.listdir(peers)
    open(os.path.join(peers, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 20
    while first and len(os.listdir(peers)) < meet and time.monotonic() < deadline:
        time.sleep(0.01)
    if first:
        open(peers + ".met", "w").write(str(int(len(os.listdir(peers)) >= meet)))
time.sleep(float(os.environ.get("BENCH_SLEEP", "0")))
print(f"time: {k['X']}")
print(f"gpu: {os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}")
print(f"pid: {os.getpid()}")
"""


def program(device: dict[str, Any], space: list[int], extra: str = "") -> str:
    return f"""---
name: g
target:
  kind: command
  command: {sys.executable} bench.py
  results: {{format: stdout}}
  knobs: {{file: knobs.json, space: {{X: {json.dumps(space)}}}}}
metric: {{name: time, better: lower}}
device: {json.dumps(device)}
decide: {{noise: 1%, confirm: 2, max_samples: 4}}
timeout: 30s
{extra}---
Tune X.
"""


def make_repo(root: Path, text: str) -> Path:
    (root / "programs").mkdir(parents=True)
    (root / "bench.py").write_text(BENCH)
    (root / "knobs.json").write_text('{"X": 100}\n')
    (root / "programs" / "g.md").write_text(text)
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    return root


def notes(root: Path, run: str) -> list[dict[str, Any]]:
    out = []
    refs = git(root, "for-each-ref", "--format=%(refname)", f"refs/kernelopt/{run}/attempts/")
    for ref in sorted(refs.split(), key=lambda r: int(r.rsplit("/", 1)[1])):
        out.append(json.loads(git(root, "notes", "--ref", "refs/notes/kernelopt", "show", ref)))
    return out


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    tools = fake_tools.FakeTools(tmp_path / "fakes")
    monkeypatch.setenv("PATH", f"{tools.bin_dir}:{__import__('os').environ['PATH']}")
    return tools


def test_measurements_run_bound_to_the_idle_gpu(tmp_path: Path, fakes: Any) -> None:
    fakes.set(
        "nvidia",
        gpus=[
            {"index": 0, "uuid": "GPU-a", "util": 97, "mem": 30000, "total": 40000},
            {"index": 1, "uuid": "GPU-b", "util": 0, "mem": 3, "total": 40000},
        ],
        apps=[{"uuid": "GPU-a", "pid": 4242, "name": "python3", "mem": 29000}],
    )
    root = make_repo(
        tmp_path / "repo", program({"kind": "nvidia", "poll": "1s", "max_wait": "5s"}, [100, 50])
    )
    proc = kernelopt(
        root,
        "run",
        "programs/g.md",
        "--tag",
        "t",
        "--json",
        env={"KERNELOPT_LOCK_DIR": str(tmp_path / "locks")},
    )
    assert proc.returncode == 0, proc.stderr
    records = notes(root, "g-t")
    assert [r["verdict"] for r in records] == ["baseline", "keep"]
    for r in records:
        rows = r["measurement"]["rows"]
        assert rows[0]["gpu"] == "GPU-b"  # bound to the idle GPU, never the busy one
        assert r["measurement"]["device"] == "nvidia:1"
    assert any("nvidia-smi" in call for call in fakes.calls)


def test_no_idle_device_stops_the_run_with_a_stop_summary(tmp_path: Path, fakes: Any) -> None:
    fakes.set(
        "nvidia",
        gpus=[{"index": 0, "uuid": "GPU-a", "util": 99, "mem": 39000, "total": 40000}],
        apps=[{"uuid": "GPU-a", "pid": 4242, "name": "python3", "mem": 39000}],
    )
    root = make_repo(
        tmp_path / "repo",
        program({"kind": "nvidia", "poll": "0.2s", "max_wait": "0.6s"}, [100, 50]),
    )
    proc = kernelopt(root, "run", "programs/g.md", "--tag", "t")
    assert "no idle device" in proc.stdout
    wt = root / ".git" / "kernelopt" / "worktrees" / "g-t"
    ledger = (wt / "performance.md").read_text()
    assert "Stop Summary" in ledger and "no idle device" in ledger
    records = notes(root, "g-t")
    assert records[-1]["verdict"] == "failed" and "not measured" in records[-1]["error"]
    # Waiting was reported, and the busy GPU was never used.
    assert "next look in" in proc.stdout
    again = kernelopt(root, "run", "programs/g.md", "--tag", "t")
    assert "stopped" in again.stdout


def test_a_batch_runs_at_once_on_two_ssh_hosts(tmp_path: Path) -> None:
    reason = sshd_server.sshd_missing_reason()
    if reason:
        pytest.skip(f"needs a local OpenSSH server: {reason}")
    server = sshd_server.LoopbackSSHD(tmp_path / "sshd", ("gym-1", "gym-2")).start()
    try:
        device = {
            "kind": "none",
            "hosts": ["gym-1", "gym-2"],
            "ssh_config": str(server.ssh_config),
            "python": sys.executable,
            "poll": "1s",
            "max_wait": "20s",
        }
        root = make_repo(tmp_path / "repo", program(device, [100, 60, 80]))
        proc = kernelopt(
            root,
            "run",
            "programs/g.md",
            "--tag",
            "t",
            "--max-candidates",
            "2",
            env={"BENCH_SLEEP": "0.3"},
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        server.stop()
    records = notes(root, "g-t")
    assert len(records) == 3
    assert {r["measurement"]["host"] for r in records} <= {"gym-1", "gym-2"}  # measured remotely
    best = min(
        (r for r in records if r["verdict"] in ("keep", "baseline")), key=lambda r: r["metric"]
    )
    assert best["metric"] == 60
    wt = root / ".git" / "kernelopt" / "worktrees" / "g-t"
    assert json.loads((wt / "knobs.json").read_text())["X"] == 60


def test_a_batch_is_measured_at_once_one_candidate_per_idle_gpu(tmp_path: Path, fakes: Any) -> None:
    fakes.set(
        "nvidia",
        gpus=[
            {"index": 0, "uuid": "GPU-a", "util": 0, "mem": 3, "total": 40000},
            {"index": 1, "uuid": "GPU-b", "util": 0, "mem": 3, "total": 40000},
        ],
        apps=[],
    )
    device = {"kind": "nvidia", "hosts": ["localhost"], "poll": "1s", "max_wait": "5s"}
    # Both candidates are slower than BEST: each is decided from its batch measurement.
    root = make_repo(tmp_path / "repo", program(device, [100, 105, 110]))
    proc = kernelopt(
        root,
        "run",
        "programs/g.md",
        "--tag",
        "t",
        "--max-candidates",
        "2",
        env={
            "BENCH_PEERS": str(tmp_path / "peers"),
            "BENCH_MEET": "2",
            "BENCH_SOLO": "100",
            "KERNELOPT_LOCK_DIR": str(tmp_path / "locks"),
        },
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = notes(root, "g-t")
    assert [r["attempt"] for r in records] == [0, 1, 2]
    batch = records[1:]
    gpus = {r["measurement"]["rows"][0]["gpu"] for r in batch}
    assert gpus == {"GPU-a", "GPU-b"}  # one candidate per device
    # The first benchmark run waited at a barrier until the other candidate's arrived.
    assert (tmp_path / "peers.met").read_text() == "1"


def test_gate_surveys_the_devices_a_program_measures_on(tmp_path: Path, fakes: Any) -> None:
    fakes.set(
        "nvidia",
        gpus=[
            {"index": 0, "uuid": "GPU-a", "util": 97, "mem": 30000, "total": 40000},
            {"index": 1, "uuid": "GPU-b", "util": 0, "mem": 3, "total": 40000},
        ],
        apps=[{"uuid": "GPU-a", "pid": 4242, "name": "python3", "mem": 29000}],
    )
    root = make_repo(tmp_path / "repo", program({"kind": "nvidia"}, [100, 50]))
    proc = kernelopt(root, "gate", "--program", "programs/g.md", "--json")
    assert proc.returncode == 0, proc.stderr
    devices = json.loads(proc.stdout)
    assert [(d["device"], d["idle"]) for d in devices] == [("0", False), ("1", True)]
    fakes.set(
        "nvidia", gpus=[{"index": 0, "uuid": "GPU-a", "util": 97, "mem": 30000, "total": 40000}]
    )
    assert kernelopt(root, "gate", "--program", "programs/g.md").returncode == 1


def test_gate_on_a_sim_program_says_there_is_nothing_to_survey(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "programs").mkdir(parents=True)
    (root / "programs" / "s.md").write_text(
        "---\nname: s\ntarget: {kind: nki, workload: w.py, kernel: k.py}\nmetric: {name: mfu, better: higher}\n---\nx\n"
    )
    (root / "w.py").write_text("INPUT_SPECS = {}\n")
    (root / "k.py").write_text("")
    git(root, "init", "-q")
    proc = kernelopt(root, "gate", "--program", "programs/s.md")
    assert proc.returncode == 1 and "sim" in proc.stderr and "Traceback" not in proc.stderr
