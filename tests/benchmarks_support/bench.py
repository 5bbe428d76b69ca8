"""A benchmark whose outcome the tests choose through ``knobs.json``.

``{"X": value}`` where value is
  a number      -> both config classes take that many microseconds;
  "split:A:B"   -> class a takes A, class b takes B;
  "wrong"       -> a correct-looking time but ``err`` 1 on every row;
  "fail"        -> exit status 1;
  "hang"        -> sleep far past any test timeout;
  "sleep:S"     -> append this process's pid to $BENCH_SLEEPER_FILE (if set),
                   sleep S seconds, then take 100;
  "signal:NAME" -> send signal NAME once to the pid in $BENCH_PID_FILE (the file
                   is removed so a resumed run measures normally), then sleep.
$BENCH_NOISE (a fraction, default 0) scales every time by a random factor in
[1 - noise, 1 + noise]. While the file named by $BENCH_LUCKY_FILE exists, the
next run reports half its time and removes the file: one lucky sample. Rows go to results/out.csv (cls, time, err) and the
mean to stdout as ``time: <value>`` / ``err: <value>`` lines.
"""

import json
import os
import random
import signal
import sys
import time

x = json.load(open("knobs.json"))["X"]
noise = float(os.environ.get("BENCH_NOISE", "0") or 0)

if isinstance(x, str) and x.startswith("signal:"):
    pid_file = os.environ.get("BENCH_PID_FILE", "")
    if pid_file and os.path.exists(pid_file):
        pid = int(open(pid_file).read().strip())
        os.remove(pid_file)
        sig = getattr(signal, x.split(":", 1)[1])
        os.kill(pid, sig)
        if sig == signal.SIGKILL:
            sys.exit(1)  # nobody is left to read the result
        time.sleep(30)  # the runner stops the measurement and kills this process
    x = 100.0
if isinstance(x, str) and x.startswith("sleep:"):
    sleeper = os.environ.get("BENCH_SLEEPER_FILE", "")
    if sleeper:
        with open(sleeper, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    time.sleep(float(x.split(":", 1)[1]))
    x = 100.0
if x == "fail":
    print("bench: the kernel crashed", file=sys.stderr)
    sys.exit(1)
if x == "hang":
    time.sleep(60)

err = 0
if x == "wrong":
    x, err = 100.0, 1
if isinstance(x, str) and x.startswith("split:"):
    a, b = (float(v) for v in x.split(":")[1:])
else:
    a = b = float(x)


def jitter(t):
    return t * (1 + random.uniform(-noise, noise)) if noise else t


lucky = os.environ.get("BENCH_LUCKY_FILE", "")
if lucky and os.path.exists(lucky):
    os.remove(lucky)
    a, b = a / 2, b / 2

times = {"a": jitter(a), "b": jitter(b)}
os.makedirs("results", exist_ok=True)
with open("results/out.csv", "w") as fh:
    fh.write("cls,time,err\n")
    for cls, t in times.items():
        fh.write(f"{cls},{t!r},{err}\n")
print(f"time: {sum(times.values()) / 2!r}")
print(f"err: {err}")
