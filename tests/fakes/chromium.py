"""Drive a headless Chromium over the DevTools protocol, for browser tests of web UIs.

    with Chromium() as browser:
        browser.open("http://127.0.0.1:7860/")
        browser.eval("document.title")
        browser.wait_for("document.body.innerText.includes('done')", timeout=30)
        png = browser.screenshot()

Chromium is Debian's ``chromium`` package (``/usr/bin/chromium``); it opens no port (the protocol
runs over a pipe) and its profile lives in a temporary folder removed on exit.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1600",
         "--remote-debugging-pipe"]


class Chromium:
    """A headless Chromium spoken to over ``--remote-debugging-pipe`` (file descriptors 3 and 4,
    NUL-separated JSON), so no port is opened and no websocket library is needed."""

    def __init__(self, binary: str = CHROMIUM, timeout: float = 60.0):
        self.binary = binary
        self.timeout = timeout
        self._ids = 0
        self._buffer = b""
        self._session: str | None = None

    def __enter__(self) -> Chromium:
        self._profile = tempfile.mkdtemp(prefix="chromium-test-")
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        # The child reads commands on fd 3 and writes replies on fd 4. Copies above 4 first, so
        # that moving one into place cannot overwrite the other.
        high_in, high_out = os.dup(to_child) + 100, os.dup(from_child) + 100
        os.dup2(to_child, high_in)
        os.dup2(from_child, high_out)

        def wire() -> None:
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self._proc = subprocess.Popen([self.binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=wire,
                                      close_fds=False)
        for fd in (high_in, high_out):
            os.close(fd)
        os.close(to_child)
        os.close(from_child)
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.send("Page.enable")
        return self

    def __exit__(self, *exc) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        os.close(self._write)
        os.close(self._read)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _recv(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self._proc.poll() is not None:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._read], [], [], left)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed its pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, **params) -> dict:
        self._ids += 1
        command = {"id": self._ids, "method": method, "params": params}
        if self._session:
            command["sessionId"] = self._session
        os.write(self._write, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:  # events arrive in between and are skipped
            message = self._recv(deadline)
            if message.get("id") == self._ids:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def eval(self, expression: str):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.eval(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} still false after {timeout}s")
            time.sleep(0.2)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
