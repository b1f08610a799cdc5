"""A real ``vilbias demo`` process for the benchmarks that time the Space: started on a free
loopback port, waited for until it accepts connections, stopped on the way out.

    with running_demo(["--threads", "2"]) as url:
        Client(url).predict(...)
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min), printed beside a measurement."""
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class DemoURL(str):
    """The demo's URL, with its process id (``pid``: for :func:`cpu_seconds`)."""

    pid: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_demo(flags: list[str], *, timeout: float = 300, poll: float = 0.05) -> Iterator[DemoURL]:
    """``vilbias -q demo --port P *flags`` offline, until it listens (at most ``timeout`` s); yields
    its URL (with its ``pid``) and terminates it afterwards."""
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "vilbias.cli", "-q", "demo", "--port", str(port), *flags],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.perf_counter() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.perf_counter() > deadline or proc.poll() is not None:
                    raise RuntimeError("vilbias demo did not start") from None
                time.sleep(poll)
        url = DemoURL(f"http://127.0.0.1:{port}/")
        url.pid = proc.pid
        yield url
    finally:
        proc.terminate()
        proc.wait(30)
