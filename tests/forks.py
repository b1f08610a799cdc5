"""Run a script as ``python SCRIPT ARGS`` runs it, in a process forked from a server that has
already imported the heavy libraries the scripts share (PyTorch, transformers, datasets, ONNX
Runtime, gradio, ...), so that each run does not pay their import again (4-8 s of CPU a script on
2 cores; the benchmarks' smoke runs in ``tests/test_benchmarks.py`` were half imports).

What the fork shares with the server is those modules, imported and not yet used: the server runs
nothing else, holds no thread, and imports nothing of ``vilbias`` or of the script. The script's own
imports (``vilbias``, its helpers), its ``__main__``, its environment, working directory,
``TMPDIR``, ``sys.argv``, ``sys.path[0]``, standard streams and exit handlers are its own, as in
a fresh interpreter; whatever it starts (``vilbias`` commands, a demo) starts fresh.

    server = ForkServer(PRELOAD)
    done = server.run(script, ["--smoke"], cwd=..., env=..., timeout=540)  # a CompletedProcess
    server.close()

The server stops by itself when its client goes (its standard input closes); a run past its
``timeout`` is killed (``SIGALRM``) and reported as such.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

PRELOAD = (
    "numpy", "pandas", "PIL.Image", "matplotlib.pyplot", "scipy.stats", "torch", "transformers",
    "transformers.modeling_utils", "transformers.trainer", "transformers.models.bert.modeling_bert",
    "datasets", "huggingface_hub", "evaluate", "onnx", "onnxruntime", "onnxruntime.quantization", "peft", "trl",
    "gradio", "gradio_client",
)
"""Third-party modules most benchmark scripts import (by ``python -X importtime``)."""


class ForkServer:
    """A server process that imports ``preload`` once, then forks a child per :meth:`run`."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD, *, startup_timeout: float = 300):
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([sys.executable, __file__, *preload], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log, text=True)
        self._reply(startup_timeout)  # {"ready": true} once the libraries are imported

    def _reply(self, timeout: float) -> dict:
        readable, _, _ = select.select([self._proc.stdout], [], [], timeout)
        line = self._proc.stdout.readline() if readable else ""
        if not line:
            try:
                code = self._proc.wait(5) if readable else None  # readable and empty: it closed its output
            except subprocess.TimeoutExpired:
                code = None
            self._proc.kill()
            self._log.seek(0)
            why = f"exited with code {code}" if code is not None else f"did not answer in {timeout:.0f} s"
            raise RuntimeError(f"the fork server {why}:\n{self._log.read().decode(errors='replace')[-4000:]}")
        return json.loads(line)

    def run(self, script: str | Path, args: list[str], *, cwd: str | Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        """``subprocess.run([sys.executable, script, *args], cwd=cwd, env=env, capture_output=True,
        text=True)``, in a fork of the server; a run past ``timeout`` s is killed (``returncode``
        -14, ``SIGALRM``)."""
        with tempfile.TemporaryDirectory(prefix="fork-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            job = {"script": str(script), "args": list(args), "cwd": str(cwd), "env": dict(env),
                   "timeout": max(1, int(timeout)), "stdout": str(out), "stderr": str(err)}
            self._proc.stdin.write(json.dumps(job) + "\n")
            self._proc.stdin.flush()
            code = self._reply(timeout + 60)["returncode"]
            return subprocess.CompletedProcess([sys.executable, str(script), *args], code,
                                               out.read_text(errors="replace"), err.read_text(errors="replace"))

    def close(self) -> None:
        """Stop the server (it holds nothing to save: killed rather than left to unload its libraries)."""
        self._proc.stdin.close()
        self._proc.kill()
        self._proc.wait(30)
        self._log.close()


def _child(job: dict) -> None:
    """In the fork: become ``python SCRIPT ARGS`` and run it; never returns."""
    import atexit
    import runpy
    import signal
    import traceback

    code = 1
    try:
        atexit._clear()  # the server's exit handlers are the server's
        signal.alarm(job["timeout"])
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        tempfile.tempdir = None  # read TMPDIR again
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            os.dup2(os.open(path, flags, 0o600), fd)
        sys.argv = [job["script"], *job["args"]]
        sys.path.insert(0, os.path.dirname(os.path.abspath(job["script"])))
        try:
            runpy.run_path(job["script"], run_name="__main__")
            code = 0
        except SystemExit as e:  # as the interpreter exits: None is 0, a message is printed and 1
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001  (a closed stream: nothing left to write)
                pass
        os._exit(code)


def _serve(preload: list[str]) -> None:
    import importlib
    import threading

    del sys.path[0]  # this file's folder, tests/: its packages (tests/evaluate) would shadow the libraries
    for name in preload:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a fork copies only the forking thread: a lock another held stays held
        raise SystemExit(f"importing {preload} started threads: {threading.enumerate()}")
    print(json.dumps({"ready": True, "preloaded": len(preload)}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(job)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
