#!/usr/bin/env python3
"""Drives headless Chromium over the DevTools protocol to look at an `fdr view` page, and prints
what it saw as one JSON object (tests/view.rs asserts on it).

    view_check.py PAGE.html [--click FUNCTION] [--await SITE] [--screenshot OUT.png]
                  [--chromium PATH]

Chromium runs with --remote-debugging-pipe (DevTools messages are JSON separated by NUL bytes on
file descriptors 3, its input, and 4, its output), a proxy that goes nowhere, and the page's
network emulated offline; it loads the page from its file:// URL. The report holds:

- errors: uncaught exceptions, console errors and log errors of the page;
- requests: every URL the page asked for (the page itself only, for a self-contained page);
- load_ms: from navigation to the load event; ready_ms: to the page's `data-ready` marker;
  script_ms: the page's own time to build itself (fdrView.readyMs);
- dom: what the page shows after load (title, reason, thread labels, the slowest calls' lines,
  the table's function names, what was left out, the whole text), and `injected` (elements or
  script effects a hostile name would have made if it were read as HTML);
- hover and click (with --click F): the tooltip's text over F's slice, and the tree panel's
  title and text after a real mouse click on it;
- await_hover (with --await SITE): the tooltip's text over the longest wait at that await site
  (`FILE:LINE:COLUMN`), drawn on its task;
- screenshot: distinct colours in a screenshot of the viewport (1 for a blank page).

Standard library only: the PNG is decoded with zlib.
"""

import argparse
import base64
import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib


class Cdp:
    """One DevTools connection over the pipe, with the events seen so far."""

    def __init__(self, proc, to_chrome, from_chrome):
        self.proc = proc
        self.w = to_chrome
        self.r = from_chrome
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("no answer from chromium within the time limit")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe (did it start?)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append((time.time(), m))

    def wait_event(self, method, timeout=60):
        deadline = time.time() + timeout
        for t, m in self.events:
            if m.get("method") == method:
                return t
        while True:
            m = self._read_message(deadline)
            t = time.time()
            self.events.append((t, m))
            if m.get("method") == method:
                return t


def find_chromium(given):
    if given:
        return given
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    sys.exit("view_check.py: no chromium on PATH (scripts/test installs Debian's chromium)")


def start(chromium, profile):
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    # Out of the way of 3 and 4, where chromium expects them.
    hi_r = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
    hi_w = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)

    def child():
        os.dup2(hi_r, 3)
        os.dup2(hi_w, 4)

    args = [
        chromium,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--remote-debugging-pipe",
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--window-size=1400,1000",
        "about:blank",
    ]
    proc = subprocess.Popen(
        args,
        # 3 and 4 are set by `child`, which runs before the fds not kept are closed.
        pass_fds=(3, 4, hi_r, hi_w),
        preexec_fn=child,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for fd in {to_r, from_w, hi_r, hi_w}:
        os.close(fd)
    return Cdp(proc, to_w, from_r)


def evaluate(cdp, session, expr):
    r = cdp.call(
        "Runtime.evaluate",
        {"expression": expr, "returnByValue": True, "awaitPromise": True},
        session,
    )
    if "exceptionDetails" in r:
        raise RuntimeError(f"evaluating {expr[:60]}: {r['exceptionDetails']}")
    return r["result"].get("value")


def png_colours(data):
    """Distinct pixel values of an 8-bit RGB or RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError(f"PNG of depth {depth}, colour type {ctype}")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    i = 0
    for _ in range(height):
        f = raw[i]
        line = bytearray(raw[i + 1 : i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 255
        for x in range(0, stride, bpp * 7):
            colours.add(bytes(line[x : x + bpp]))
        prev = line
    return len(colours)


DOM = r"""
(() => {
  const texts = (sel) => Array.from(document.querySelectorAll(sel)).map((e) => e.textContent);
  return {
    title: document.title,
    ready: document.documentElement.getAttribute('data-ready'),
    reason: document.getElementById('reason').textContent,
    threads: texts('#threads .thread-label'),
    slowest: texts('.slow > summary'),
    functions: texts('#functions tbody td.name'),
    left_out: texts('#left-out li'),
    text: document.body.innerText,
    scripts: document.scripts.length,
    injected: document.querySelectorAll('main img, main iframe, main object, main svg, main b, #tooltip *:not(div)').length
      + (window.__fdr_pwned ? 1000 : 0),
    script_ms: window.fdrView ? window.fdrView.readyMs : null,
  };
})()
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--click")
    ap.add_argument("--await", dest="await_site")
    ap.add_argument("--screenshot")
    ap.add_argument("--chromium")
    a = ap.parse_args()
    url = "file://" + os.path.abspath(a.page)
    profile = tempfile.mkdtemp(prefix="fdr-view-chromium-")
    cdp = start(find_chromium(a.chromium), profile)
    report = {}
    try:
        targets = cdp.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = cdp.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})[
            "sessionId"
        ]
        for m in ("Runtime.enable", "Page.enable", "Log.enable", "Network.enable"):
            cdp.call(m, {}, session)
        cdp.call(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
            session,
        )
        cdp.events.clear()
        t0 = time.time()
        cdp.call("Page.navigate", {"url": url}, session)
        t_load = cdp.wait_event("Page.loadEventFired", timeout=120)
        while evaluate(cdp, session, "document.documentElement.getAttribute('data-ready')") != "1":
            if time.time() - t0 > 120:
                break
            time.sleep(0.01)
        t_ready = time.time()
        report["load_ms"] = round((t_load - t0) * 1000, 1)
        report["ready_ms"] = round((t_ready - t0) * 1000, 1)
        report["dom"] = evaluate(cdp, session, DOM)
        if a.click:
            pt = evaluate(cdp, session, f"fdrView.slicePoint({json.dumps(a.click)})")
            report["point"] = pt
            if pt:
                x, y = pt["x"], pt["y"]
                cdp.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session)
                report["hover"] = evaluate(
                    cdp, session, "document.getElementById('tooltip').hidden ? null : document.getElementById('tooltip').textContent"
                )
                for kind in ("mousePressed", "mouseReleased"):
                    cdp.call(
                        "Input.dispatchMouseEvent",
                        {"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
                        session,
                    )
                report["click"] = evaluate(
                    cdp,
                    session,
                    "({hidden: document.getElementById('tree-panel').hidden,"
                    " title: document.getElementById('tree-title').textContent,"
                    " tree: document.getElementById('tree').innerText})",
                )
        if a.await_site:
            pt = evaluate(cdp, session, f"fdrView.awaitPoint({json.dumps(a.await_site)})")
            report["await_point"] = pt
            if pt:
                cdp.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": pt["x"], "y": pt["y"]}, session)
                report["await_hover"] = evaluate(
                    cdp, session, "document.getElementById('tooltip').hidden ? null : document.getElementById('tooltip').textContent"
                )
        shot = cdp.call("Page.captureScreenshot", {"format": "png"}, session)
        png = base64.b64decode(shot["data"])
        if a.screenshot:
            with open(a.screenshot, "wb") as f:
                f.write(png)
        report["screenshot"] = {"bytes": len(png), "colours": png_colours(png)}
        errors, requests = [], []
        for _, m in cdp.events:
            meth, p = m.get("method"), m.get("params", {})
            if meth == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                errors.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append("console: " + " ".join(str(x.get("value", x.get("description"))) for x in p["args"]))
            elif meth == "Log.entryAdded" and p["entry"]["level"] == "error":
                errors.append("log: " + p["entry"]["text"])
            elif meth == "Network.requestWillBeSent":
                requests.append(p["request"]["url"])
        report["errors"] = errors
        report["requests"] = requests
    finally:
        try:
            cdp.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            cdp.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cdp.proc.kill()
            cdp.proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
