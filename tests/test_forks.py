"""tests/forks.py: a forked run is a script run as ``python SCRIPT ARGS`` runs it (argv, path,
environment, working directory, TMPDIR, streams, exit code and exit handlers its own), and a run
past its time is killed; its launcher stands in for ``python -m MODULE`` and ``python SCRIPT`` of
a named folder under ``subprocess`` (streams, signals, exit status), and runs the rest fresh."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.forks import ForkServer, sigkill

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


MODULE = textwrap.dedent("""
    import os, signal, sys, time
    print("preloaded" if "json" in sys.modules else "fresh", os.path.basename(sys.argv[0]), sys.argv[1:], os.getcwd(),
          os.environ.get("ONLY_HERE"), flush=True)
    print("to stderr", file=sys.stderr)
    if "--wait" in sys.argv:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        print("waiting", flush=True)
        time.sleep(60)
    sys.exit(int(sys.argv[1]))
""")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("forks") / "fresh.jsonl"
    os.environ["VILBIAS_TESTS_FORKS_LOG"] = str(log)  # read by the server's forks
    try:
        scripts = tmp_path_factory.mktemp("forked_scripts")
        forks = ForkServer(("json",), modules=("forked_module",), scripts_under=(scripts,))
    finally:
        del os.environ["VILBIAS_TESTS_FORKS_LOG"]
    forks.fresh_log, forks.scripts = log, scripts
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


@pytest.fixture
def module(tmp_path):
    (tmp_path / "forked_module.py").write_text(MODULE)
    return tmp_path


def test_the_launcher_forks_python_m_module_under_popen(server, module):
    done = subprocess.run([server.python, "-m", "forked_module", "5", "y"], cwd=module, env={**os.environ, "ONLY_HERE": "yes"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 5
    assert done.stdout == f"preloaded forked_module.py ['5', 'y'] {module} yes\n"
    assert done.stderr == "to stderr\n"


def test_the_launcher_relays_signals_and_exits_as_the_fork_did(server, module):
    for sig, code in ((signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 143)):  # KeyboardInterrupt unhandled; a handler's exit
        proc = subprocess.Popen([server.python, "-m", "forked_module", "0", "--wait"], cwd=module, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        while "waiting" not in proc.stdout.readline():
            pass
        proc.send_signal(sig)
        assert proc.wait(30) == code


def test_a_killed_launcher_takes_its_fork_along(server, module):
    proc = subprocess.Popen([server.python, "-m", "forked_module", "0", "--wait"], cwd=module, stdout=subprocess.PIPE, text=True)
    while "waiting" not in proc.stdout.readline():
        pass
    forks = server.running()
    sigkill(proc, server)
    assert len(forks) == 1 and not server.running()


def test_the_launcher_forks_a_script_in_a_named_folder_and_runs_others_fresh(server, module):
    (server.scripts / "forked_module.py").write_text(MODULE)
    done = subprocess.run([server.python, "forked_module.py", "4", "z"], cwd=server.scripts, env={**os.environ, "ONLY_HERE": "yes"},
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (4, f"preloaded forked_module.py ['4', 'z'] {server.scripts} yes\n", "to stderr\n")
    elsewhere = subprocess.run([server.python, str(module / "forked_module.py"), "0"], cwd=module, capture_output=True, text=True, timeout=60)
    assert elsewhere.stdout.startswith("fresh forked_module.py ['0']")


def test_the_rest_runs_fresh(server, module):
    other = subprocess.run([server.python, "-c", "import sys; print('json' in sys.modules, sys.argv)", "a"], capture_output=True,
                           text=True, timeout=60)
    assert other.stdout == "False ['-c', 'a']\n"
    # another value of a variable libraries read on import: a fresh interpreter
    done = subprocess.run([server.python, "-m", "forked_module", "0"], cwd=module, env={**os.environ, "HF_HUB_OFFLINE": "0"},
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("fresh forked_module.py")
    # and VILBIAS_TESTS_FORKS_LOG says which variable made it so
    logged = [json.loads(line) for line in server.fresh_log.read_text(encoding="utf-8").splitlines()]
    assert logged[-1] == {"argv": ["-m", "forked_module", "0"], "differs": ["HF_HUB_OFFLINE"]}
