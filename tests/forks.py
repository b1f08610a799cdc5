"""Start Python programs as ``python ...`` starts them, in processes forked from a server that has
already imported the heavy libraries they share (PyTorch, transformers, datasets, ONNX Runtime,
gradio, ...), so that each does not pay their import again (4-8 s of CPU a process on 2 cores:
the benchmarks' smoke runs and the stop tests' commands were half imports).

What a fork shares with the server is those modules, imported and not yet used (and frozen out of
the garbage collector, so that a fork's collections skip them): the server runs nothing else,
holds no thread, and imports nothing of ``vilbias``. The program's own imports
(``vilbias``, a script's helpers), its ``__main__``, environment, working directory, ``TMPDIR``,
``sys.argv``, ``sys.path[0]``, standard streams, signals and exit handlers are its own, as in a
fresh interpreter, and it ends as one does (threads joined, exit handlers run, the exit status
of an exception, of ``sys.exit`` or of Ctrl-C), short of the modules' teardown and the libraries'
C++ destructors, which are not safe in a fork (see :func:`_become`).

Two ways in:

    server = ForkServer(PRELOAD)
    done = server.run(script, ["--smoke"], cwd=..., env=..., timeout=540)  # a CompletedProcess
    proc = subprocess.Popen([server.python, "-m", "vilbias.cli", "build"], ...)   # any Popen use
    server.close()

- :meth:`ForkServer.run` runs a script (``python SCRIPT ARGS``); inside it ``sys.executable`` is
  :attr:`ForkServer.python`, so the ``vilbias`` commands the script starts are forks too.
- :attr:`ForkServer.python` is a launcher (a shell script that runs a stdlib-only script with
  ``python -SI``: ~20 ms) that stands in for the interpreter: ``python -m
  vilbias.cli ARGS``, and ``python SCRIPT ARGS`` of a script in one of the folders
  ``scripts_under`` names, become forks (the launcher hands over its standard streams, relays
  SIGINT, SIGTERM, SIGHUP and SIGQUIT, and exits as the fork did); anything else (``-c``, another
  script, ``-X importtime``) runs the real interpreter, fresh. A fork whose environment differs
  from the server's in a variable libraries read on import (``HF_*``, ``OMP_*``, ``PYTHON*``, ...)
  runs the real interpreter as well (``VILBIAS_TESTS_FORKS_LOG=FILE``: a line in FILE for each,
  naming the variables that differed).

The server stops by itself when its client goes (its standard input closes); a fork whose
launcher goes is killed; a run past its ``timeout`` is killed (``SIGALRM``) and reported as such.
"""

from __future__ import annotations

import gc
import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRELOAD = (
    "numpy", "pandas", "PIL.Image", "matplotlib.pyplot", "scipy.stats", "torch", "transformers",
    "transformers.modeling_utils", "transformers.trainer", "transformers.models.bert.modeling_bert",
    "datasets", "huggingface_hub", "evaluate", "onnx", "onnxruntime", "onnxruntime.quantization", "peft", "trl",
    "gradio", "gradio_client", "sklearn.metrics",
)
"""Third-party modules most forked programs import (by ``python -X importtime``)."""

IMPORT_TIME_ENV = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "DATASETS_", "TOKENIZERS_", "TORCH", "PYTORCH_", "CUDA_", "OMP_",
                   "MKL_", "OPENBLAS_", "KMP_", "GRADIO_", "MPL", "PYTHON", "XDG_", "HOME", "LANG", "LC_")
"""Environment variables read as libraries import (or as the interpreter starts): a program whose
values differ from the server's runs in a fresh interpreter."""

FORKED_MODULES = ("vilbias.cli",)
"""``python -m MODULE`` the launcher forks (the rest runs fresh: tests that check what a command
imports, or that a library prints nothing as it imports, start the real interpreter themselves)."""

RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

LAUNCHER = '''# Stands in for {python} (tests/forks.py): "-m vilbias.cli ..." is forked by the fork server.
import json, os, signal, socket, sys
PYTHON, ADDRESS, MODULES, SCRIPTS_UNDER = {python!r}, {address!r}, {modules!r}, {scripts_under!r}
argv = sys.argv[1:]
script = os.path.abspath(argv[0]) if argv and argv[0].endswith(".py") else ""
if len(argv) >= 2 and argv[0] == "-m" and argv[1] in MODULES:
    job = {{"module": argv[1], "args": argv[2:]}}
elif os.path.dirname(script) in SCRIPTS_UNDER:
    job = {{"script": script, "args": argv[1:]}}
else:
    os.execv(PYTHON, [PYTHON, *argv])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    sock.connect(ADDRESS)
except OSError:  # the server is gone: run it fresh
    os.execv(PYTHON, [PYTHON, *argv])
job.update({{"cwd": os.getcwd(), "env": dict(os.environ), "executable": PYTHON}})
socket.send_fds(sock, [(json.dumps(job) + "\\n").encode()], [0, 1, 2])
stream = sock.makefile("r")
pid = json.loads(stream.readline())["pid"]
for sig in {relayed!r}:
    signal.signal(sig, lambda s, _: os.kill(pid, s))
line = stream.readline()
code = json.loads(line)["returncode"] if line else 1
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
'''


class ForkServer:
    """A server process that imports ``preload`` once, then forks a child per program it is asked
    to run (several at once: a script and the commands it starts)."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD, *, modules: tuple[str, ...] = FORKED_MODULES,
                 scripts_under: tuple[str | Path, ...] = (), startup_timeout: float = 300):
        self._log = tempfile.TemporaryFile()
        folders = os.pathsep.join(os.path.abspath(folder) for folder in scripts_under)
        self._proc = subprocess.Popen([sys.executable, __file__, ",".join(modules), folders, *preload], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, text=True)
        ready = self._reply(startup_timeout)  # once the libraries are imported
        self.address: str = ready["address"]
        self.python: str = ready["python"]
        """An executable that stands in for ``sys.executable`` (see the module's docstring)."""

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
        job = {"script": str(script), "args": list(args), "cwd": str(cwd), "env": dict(env), "timeout": max(1, int(timeout)),
               "executable": self.python}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as null, \
                socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(self.address)
            socket.send_fds(sock, [(json.dumps(job) + "\n").encode()], [null.fileno(), out.fileno(), err.fileno()])
            stream = sock.makefile("r")
            json.loads(stream.readline())  # {"pid": ...}
            readable, _, _ = select.select([sock], [], [], timeout + 60)
            line = stream.readline() if readable else ""
            if not line:
                raise RuntimeError(f"the fork server did not report how {script} ended")
            code = json.loads(line)["returncode"]
            out.seek(0), err.seek(0)
            return subprocess.CompletedProcess([sys.executable, str(script), *args], code,
                                               out.read().decode(errors="replace"), err.read().decode(errors="replace"))

    def running(self) -> list[int]:
        """The process ids of the forks running now (the server's children)."""
        try:
            with open(f"/proc/{self._proc.pid}/task/{self._proc.pid}/children", encoding="ascii") as f:
                return [int(pid) for pid in f.read().split()]
        except FileNotFoundError:  # the server is gone
            return []

    def wait_until_idle(self, timeout: float = 30) -> None:
        """Wait until no fork runs: a launcher killed with SIGKILL cannot pass the signal on, its
        fork is killed as the server notices it is gone, a moment later."""
        deadline = time.monotonic() + timeout
        while running := self.running():
            if time.monotonic() > deadline:
                raise TimeoutError(f"forks still running after {timeout} s: {running}")
            time.sleep(0.01)

    def close(self) -> None:
        """Stop the server (it holds nothing to save: killed rather than left to unload its libraries)."""
        self._proc.stdin.close()
        self._proc.kill()
        self._proc.wait(30)
        self._log.close()


def sigkill(proc: subprocess.Popen, server: ForkServer | None) -> None:
    """Kill a program started with ``server.python`` (or fresh, without a server) with SIGKILL and
    return once it is gone, its fork included (:meth:`ForkServer.wait_until_idle`)."""
    proc.kill()
    proc.wait(10)
    if server is not None:
        server.wait_until_idle()


# -- the server --------------------------------------------------------------------------------------


def _import_time_env(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that libraries may read as they import (:data:`IMPORT_TIME_ENV`)."""
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_ENV)}


def _serve(modules: list[str], scripts_under: list[str], preload: list[str]) -> tuple[dict, list[int]] | None:
    """Import ``preload``, then serve until standard input closes (the launcher forks ``python -m``
    of ``modules`` and ``python SCRIPT`` of the scripts in the folders ``scripts_under``). Returns
    ``None`` in the server (time to exit) and ``(job, its three standard streams)`` in a fork, which
    then becomes the program: nothing of the server's own clean-up runs in a fork."""
    import importlib
    import selectors
    import threading

    del sys.path[0]  # this file's folder, tests/: its packages (tests/evaluate) would shadow the libraries
    own_env = _import_time_env(dict(os.environ))
    for name in preload:
        importlib.import_module(name)
    set_by_imports = _import_time_env(dict(os.environ)).keys() - own_env.keys()  # not an input: a fresh import sets them too
    # What the imports left alive is frozen out of the garbage collector (gc.freeze, as Python's
    # docs advise before fork() without exec): each full collection in a fork walked the ~700,000
    # inherited objects, ~0.8 s of CPU, and copied the ~190 MB of memory pages it touched; frozen,
    # they are skipped, and stay alive as they would (modules, kept to the end anyway).
    gc.collect()
    gc.freeze()
    if threading.active_count() != 1:  # a fork copies only the forking thread: a lock another held stays held
        raise SystemExit(f"importing {preload} started threads: {threading.enumerate()}")
    if not hasattr(os, "pidfd_open"):
        raise SystemExit("the fork server needs os.pidfd_open (Linux 5.3, Python 3.9)")
    home = tempfile.mkdtemp(prefix="forks-")
    address = f"\0vilbias-forks-{os.getpid()}-{os.urandom(6).hex()}"  # Linux's abstract namespace: no file to remove
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(16)
    python, launcher = os.path.join(home, "python"), os.path.join(home, "launcher.py")
    with open(launcher, "w", encoding="utf-8") as f:
        f.write(LAUNCHER.format(python=sys.executable, address=address, modules=tuple(modules), scripts_under=tuple(scripts_under),
                                relayed=tuple(int(s) for s in RELAYED)))
    with open(python, "w", encoding="utf-8") as f:  # a shell script: a "#!" line has a length limit, a path has none
        f.write(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -SI {shlex.quote(launcher)} \"$@\"\n")
    os.chmod(python, 0o700)
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    sel.register(listener, selectors.EVENT_READ, "listener")
    arriving: dict[socket.socket, tuple[bytearray, list[int]]] = {}  # connection -> its job so far, and the streams it sent
    running: dict[socket.socket, tuple[int, int]] = {}  # connection -> its fork's (pid, pidfd)
    print(json.dumps({"ready": True, "preloaded": len(preload), "address": address, "python": python}), flush=True)

    def finish(conn: socket.socket) -> None:
        pid, pidfd = running.pop(conn)
        sel.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        try:
            conn.sendall((json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n").encode())
        except OSError:  # the launcher went
            pass
        if conn in sel.get_map():  # still read from (not when its launcher went first)
            sel.unregister(conn)
        conn.close()

    while True:
        for key, _ in sel.select():
            what = key.data
            if what == "stdin":
                if not sys.stdin.readline():  # the client went: stop, and every fork with it
                    for conn, (pid, _) in list(running.items()):
                        os.kill(pid, signal.SIGKILL)
                        finish(conn)
                    os.unlink(python)
                    os.unlink(launcher)
                    os.rmdir(home)
                    return None
            elif what == "listener":
                conn, _ = listener.accept()
                arriving[conn] = (bytearray(), [])
                sel.register(conn, selectors.EVENT_READ, "conn")
            elif what == "conn":
                conn = key.fileobj
                if conn not in sel.get_map():  # finished earlier in this round
                    continue
                if conn in running:  # the launcher went (or wrote what it should not): its fork goes too
                    sel.unregister(conn)
                    os.kill(running[conn][0], signal.SIGKILL)
                    continue  # reaped through its pidfd
                data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                job, fds = arriving[conn][0] + data, arriving[conn][1] + fds
                arriving[conn] = (job, fds)
                if not data:  # gone before it asked
                    for fd in arriving.pop(conn)[1]:
                        os.close(fd)
                    sel.unregister(conn)
                    conn.close()
                    continue
                if not job.endswith(b"\n"):
                    continue
                del arriving[conn]
                job = json.loads(job)
                pid = os.fork()
                if pid == 0:
                    for other in [listener, conn, *arriving, *running]:  # the server's, not the program's
                        other.close()
                    for fd in [pidfd for _, pidfd in running.values()] + [fd for _, waiting in arriving.values() for fd in waiting]:
                        os.close(fd)
                    sel.close()
                    env = _import_time_env(job["env"])
                    job["fresh"] = sorted(k for k in (env.keys() | own_env.keys()) - set_by_imports
                                          if env.get(k) != own_env.get(k))  # the variables that differ
                    return job, fds
                for fd in fds:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                running[conn] = (pid, pidfd)
                sel.register(pidfd, selectors.EVENT_READ, conn)
                conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
            else:  # a fork ended
                finish(what)


def _become(job: dict, fds: list[int]) -> None:
    """In a fork: become the program the job names (``python -m MODULE ARGS`` or ``python SCRIPT
    ARGS``), run it, and exit as the interpreter would; never returns."""
    import atexit
    import ctypes
    import io
    import runpy
    import threading

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the server killed, its forks go too
    for fd, stream in zip((0, 1, 2), fds, strict=True):
        os.dup2(stream, fd)
        os.close(stream)
    os.chdir(job["cwd"])
    argv = ["-m", job["module"], *job["args"]] if "module" in job else [job["script"], *job["args"]]
    if job["fresh"]:  # a library would have read another environment on import
        if os.environ.get("VILBIAS_TESTS_FORKS_LOG"):  # why (a changed variable makes every later fork fresh)
            with open(os.environ["VILBIAS_TESTS_FORKS_LOG"], "a", encoding="utf-8") as log:
                log.write(json.dumps({"argv": argv, "differs": job["fresh"]}) + "\n")
        os.execve(sys.executable, [sys.executable, *argv], job["env"])
    atexit._clear()  # the server's exit handlers are the server's
    if "timeout" in job:
        signal.alarm(job["timeout"])
    os.environ.clear()
    os.environ.update(job["env"])
    tempfile.tempdir = None  # read TMPDIR again
    if "numpy" in sys.modules:  # seeded afresh, as in a new interpreter (``random`` reseeds itself on fork)
        sys.modules["numpy"].random.seed()
    sys.stdin = io.TextIOWrapper(open(0, "rb", closefd=False), encoding=sys.stdin.encoding, errors=sys.stdin.errors)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        setattr(sys, name, io.TextIOWrapper(open(fd, "wb", closefd=False), encoding=old.encoding, errors=old.errors,
                                            line_buffering=fd == 2 or os.isatty(fd), write_through=fd == 2))
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.executable = job["executable"]
    code, interrupted = 0, False
    try:
        if "module" in job:
            sys.argv = ["-m", *job["args"]]  # runpy puts the module's file in argv[0]
            sys.path.insert(0, os.getcwd())
            runpy._run_module_as_main(job["module"], alter_argv=True)
        else:
            sys.argv = [job["script"], *job["args"]]
            sys.path.insert(0, os.path.dirname(os.path.abspath(job["script"])))
            runpy.run_path(job["script"], run_name="__main__")
    except SystemExit as e:  # as the interpreter exits: None is 0, a message is printed and 1
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException as e:  # noqa: BLE001  (as the interpreter: the traceback, then 1; Ctrl-C: ended by SIGINT)
        sys.excepthook(type(e), e, e.__traceback__)
        code, interrupted = 1, isinstance(e, KeyboardInterrupt)
    # The interpreter's shutdown up to what a fork must skip: threads joined, exit handlers run,
    # streams flushed. Not the modules' teardown nor the libraries' C++ destructors: ONNX Runtime's
    # joins a thread of the server that a fork does not have (it hangs), torch's aborts. A command
    # freezes its objects out of the last collection (vilbias.cli.run), which leaves that part
    # ~0.1-0.17 s of a fresh process's exit with every preloaded library loaded (2-core AVX-512
    # Xeon), far inside the stop tests' 2 s.
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001  (a closed stream: nothing left to write)
                pass
        if interrupted:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


if __name__ == "__main__":
    forked = _serve(sys.argv[1].split(","), [f for f in sys.argv[2].split(os.pathsep) if f], sys.argv[3:])
    if forked is not None:
        _become(*forked)
