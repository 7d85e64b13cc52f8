"""Headless Chromium driven over the DevTools protocol, for the report page's browser test.

Chromium speaks the protocol over a pipe (`--remote-debugging-pipe`: JSON messages ended by NUL on file
descriptors 3 and 4), which is what Puppeteer uses; that needs nothing but the standard library, no port
is opened (not even on loopback), and the browser is Debian's `chromium` package. Selenium would add a
driver process and a dozen packages, Playwright its own browser download (not possible offline), to do
the four things this test needs: load a page, collect console messages and errors, evaluate a script and
take a screenshot.

    with Chromium() as browser:
        browser.open(path)
        browser.evaluate("document.title"); browser.screenshot(); browser.problems()
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

# the flags the project runs Chromium with: nothing reaches the network, a fresh empty profile
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]
WIDTH, HEIGHT = 1280, 900  # a laptop's window


def find() -> Optional[str]:
    """The Chromium binary: HARNESS_CHROMIUM, else chromium (Debian) or chromium-browser on the PATH."""
    named = os.environ.get("HARNESS_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    def __init__(self, binary: Optional[str] = None, timeout: float = 60.0):
        self.binary = binary or find()
        if not self.binary:
            raise FileNotFoundError("no chromium on the PATH (apt-get install chromium)")
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._buf = b""
        self._id = 0
        self._session: Optional[str] = None

    def __enter__(self) -> "Chromium":
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser, self._w = os.pipe()
        self._r, from_browser = os.pipe()

        def fds() -> None:  # in the child: the protocol's pipes on 3 (commands in) and 4 (answers out)
            a, b = os.dup(to_browser), os.dup(from_browser)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [self.binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={WIDTH},{HEIGHT}",
             "about:blank"], preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_browser)
        os.close(from_browser)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.send("Browser.close", session=False)
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method: str, params: Optional[dict] = None, session: bool = True) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self._session:
            message["sessionId"] = self._session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        wanted = self._id
        answer = self._wait(lambda m: m.get("id") == wanted)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def _wait(self, match) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                message = json.loads(raw)
                if match(message):
                    return message
                self.events.append(message)
            ready, _, _ = select.select([self._r], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its pipe")
            self._buf += chunk

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event (images decoded included)."""
        before = len(self.events)
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()})
        seen = next((e for e in self.events[before:] if e.get("method") == "Page.loadEventFired"), None)
        if seen is None:
            self._wait(lambda m: m.get("method") == "Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, full_page: bool = False) -> bytes:
        """A PNG of the window, or of the whole page."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            width, height = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width, "height": height,
                                                            "scale": 1})
        return base64.b64decode(self.send("Page.captureScreenshot", params)["data"])

    def pdf(self) -> bytes:
        return base64.b64decode(self.send("Page.printToPDF", {"printBackground": True})["data"])

    def problems(self) -> list[str]:
        """Console messages, uncaught exceptions and the browser's own errors and warnings (a resource that
        failed to load, a blocked request): a page that works cleanly has none."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled":
                out.append(f"console.{params.get('type')}: "
                           + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                entry = params["entry"]
                out.append(f"{entry.get('level')}: {entry.get('source')}: {entry.get('text')}")
        return out
