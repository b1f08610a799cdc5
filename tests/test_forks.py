"""tests/forks.py: a forked run is a script run as ``python SCRIPT ARGS`` runs it (argv, path,
environment, working directory, TMPDIR, streams, exit code and exit handlers its own), and a run
past its time is killed."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from tests.forks import ForkServer

SCRIPT = textwrap.dedent("""
    import atexit, os, sys, tempfile
    import json_helper_beside_me  # sys.path[0] is the script's folder
    atexit.register(lambda: print("exit handler ran"))
    print(json_helper_beside_me.VALUE, sys.argv[1:], os.getcwd(), os.environ.get("ONLY_HERE"), tempfile.gettempdir())
    print("to stderr", file=sys.stderr)
    if "--fail" in sys.argv:
        raise ValueError("failed as asked")
    if "--sleep" in sys.argv:
        import time
        time.sleep(60)
    sys.exit(int(sys.argv[1]))
""")


@pytest.fixture(scope="module")
def server():
    forks = ForkServer(("json",))
    yield forks
    forks.close()


@pytest.fixture
def script(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "json_helper_beside_me.py").write_text("VALUE = 'helper'\n")
    (tmp_path / "bin" / "script.py").write_text(SCRIPT)
    return tmp_path / "bin" / "script.py"


def test_a_forked_run_is_the_script_run_as_python_runs_it(server, script, tmp_path):
    work, scratch = tmp_path / "work", tmp_path / "scratch"
    work.mkdir(), scratch.mkdir()
    env = {**os.environ, "ONLY_HERE": "yes", "TMPDIR": str(scratch)}
    done = server.run(script, ["3", "x"], cwd=work, env=env, timeout=60)
    assert done.returncode == 3
    assert done.stdout == f"helper ['3', 'x'] {work} yes {scratch}\nexit handler ran\n"
    assert done.stderr == "to stderr\n"
    assert done.args == [sys.executable, str(script), "3", "x"]
    again = server.run(script, ["0"], cwd=work, env=dict(os.environ), timeout=60)
    assert again.stdout.split()[3] == "None"  # nothing of one run's environment is left for the next


def test_an_exception_is_a_traceback_and_exit_code_1_and_the_server_goes_on(server, script, tmp_path):
    done = server.run(script, ["0", "--fail"], cwd=tmp_path, env=dict(os.environ), timeout=60)
    assert done.returncode == 1 and "ValueError: failed as asked" in done.stderr
    assert server.run(script, ["0"], cwd=tmp_path, env=dict(os.environ), timeout=60).returncode == 0


def test_a_run_past_its_time_is_killed(server, script, tmp_path):
    done = server.run(script, ["0", "--sleep"], cwd=tmp_path, env=dict(os.environ), timeout=1)
    assert done.returncode == -14  # SIGALRM


def test_a_server_that_cannot_start_says_why():
    with pytest.raises(RuntimeError, match=r"(?s)exited with code 1.*No module named 'no_such_module_here'"):
        ForkServer(("no_such_module_here",))
