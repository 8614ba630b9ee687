"""Open the report (or a page of the docs site) in headless Chromium, check it renders, save a screenshot.

    python -m validation.screenshot report/index.html report/screenshot.png [--height PX]

Two browser runs: ``--dump-dom`` after the page's load event (the page's script then marks
``<body data-images-ok=K data-images-broken=M data-page-height=H data-page-width=W>``: images
the browser really decoded and the page's size; a docs page also ``data-math-rendered`` and
``data-math-errors``), and ``--screenshot`` of the whole page (the height it measured itself).
Exit status 0 when every image loaded, at least one is present, the pure-Python link check
(:func:`validation.report.broken_links`) finds nothing and the PNG was written; 1 otherwise; 2
when no Chromium is installed (``apt-get install chromium``; the test suite installs it with
:func:`install_chromium` and fails when it cannot).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["find_chromium", "install_chromium", "browser_check", "main"]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
MAX_HEIGHT = 32000  # px: the tallest screenshot taken (headless, software-rendered); a longer page is cut there


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary on PATH, or ``None``."""
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def install_chromium(timeout: float = 900) -> str | None:
    """Install Debian's ``chromium`` with apt-get when none is found (needs root, as in CI).

    Returns the browser's path, or ``None`` when it cannot be had (not root, no apt-get, the
    install failed or ran past ``timeout`` seconds); the reason is printed to stderr. Processes
    that call it at once (pytest-xdist workers) install one after another under a file lock, and
    apt-get waits for dpkg's lock held by any other apt process: on a machine without Chromium
    the two workers of ``pytest -n 2`` used to race, and the loser failed on dpkg's lock.
    """
    found = find_chromium()
    if found is not None:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        print("install_chromium: needs apt-get and root", file=sys.stderr)
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = f"DPkg::Lock::Timeout={int(timeout)}"
    lock_path = Path(tempfile.gettempdir()) / "mdm-theory-install-chromium.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        found = find_chromium()  # another process may have installed it meanwhile
        if found is not None:
            return found
        try:
            for cmd in (["apt-get", "-o", wait, "update"],
                        ["apt-get", "-o", wait, "install", "-y", "--no-install-recommends", "chromium"]):
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
                if proc.returncode != 0:
                    print(f"install_chromium: {' '.join(cmd)} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
                    return None
        except subprocess.TimeoutExpired:
            print(f"install_chromium: apt-get ran past {timeout} s", file=sys.stderr)
            return None
    return find_chromium()


def _run(browser: str, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="mdm-chromium-") as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def browser_check(html: Path, png: Path, width: int = 1280, height: int | None = None,
                  timeout: float = 120) -> dict:
    """Render ``html`` in headless Chromium; returns what was checked (see module docstring).

    ``height=None`` takes the whole page: its height as the page's script measured it after
    loading (``data-page-height``), up to :data:`MAX_HEIGHT`. ``page_width`` above ``width``
    means the page scrolls sideways.
    """
    from validation.report import broken_links

    browser = find_chromium()
    if browser is None:
        raise FileNotFoundError("no Chromium found (apt-get install chromium)")
    url = html.resolve().as_uri()
    dom = _run(browser, ["--dump-dom", f"--window-size={width},1000", url], timeout).stdout
    ok = re.search(r'data-images-ok="(\d+)"', dom)
    broken = re.search(r'data-images-broken="(\d+)"', dom)
    page_h = re.search(r'data-page-height="(\d+)"', dom)
    page_w = re.search(r'data-page-width="(\d+)"', dom)
    math = re.search(r'data-math-rendered="(\d+)"', dom)
    math_err = re.search(r'data-math-errors="(\d+)"', dom)
    if height is None:
        height = min(int(page_h.group(1)) if page_h else 6000, MAX_HEIGHT)
    png.parent.mkdir(parents=True, exist_ok=True)
    shot = _run(browser, [f"--screenshot={png.resolve()}", f"--window-size={width},{height}", url], timeout)
    return {
        "browser": browser,
        "images_ok": int(ok.group(1)) if ok else None,
        "images_broken": int(broken.group(1)) if broken else None,
        "page_height": int(page_h.group(1)) if page_h else None,
        "page_width": int(page_w.group(1)) if page_w else None,
        "math_rendered": int(math.group(1)) if math else None,
        "math_errors": int(math_err.group(1)) if math_err else None,
        "broken_links": broken_links(html),
        "screenshot": str(png),
        "screenshot_bytes": png.stat().st_size if png.exists() else 0,
        "browser_stderr_tail": shot.stderr[-500:],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", type=Path)
    ap.add_argument("png", type=Path)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=None, help="window height in px (default: the whole page)")
    args = ap.parse_args(argv)
    try:
        res = browser_check(args.html, args.png, args.width, args.height)
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 2
    for k, v in res.items():
        if k != "browser_stderr_tail":
            print(f"{k}: {v}")
    good = (res["images_ok"] or 0) > 0 and res["images_broken"] == 0 and not res["broken_links"] \
        and res["screenshot_bytes"] > 0
    print("render check:", "ok" if good else "FAILED")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
