"""A real headless Chromium (Debian's package) driven through Selenium, for the web tests."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = Path(__file__).resolve().parents[2] / "tests" / "web" / "screenshots"


def have_chromium() -> bool:
    return Path(CHROMIUM).exists() and (Path(CHROMEDRIVER).exists() or bool(
        shutil.which("chromedriver")))


@contextlib.contextmanager
def chromium(width: int = 1366, height: int = 900) -> Iterator[Any]:
    """A fresh browser profile with network logging on; nothing is ever downloaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="arena-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                f"--user-data-dir={profile}", f"--window-size={width},{height}",
                "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver_path = CHROMEDRIVER if Path(CHROMEDRIVER).exists() else shutil.which("chromedriver")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        with contextlib.suppress(Exception):
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: Any, name: str, full: bool = True) -> Path:
    """Save a PNG of the page (the whole page height when ``full``)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    if full:
        height = int(driver.execute_script(
            "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"))
        width = int(driver.execute_script("return window.innerWidth"))
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": min(height, 6000), "deviceScaleFactor": 1,
            "mobile": False})
        driver.save_screenshot(str(path))
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    else:
        driver.save_screenshot(str(path))
    return path


def network_messages(driver: Any) -> list[dict[str, Any]]:
    """The DevTools network events logged since the last call (each read once)."""
    out = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if str(msg.get("method", "")).startswith("Network."):
            out.append(msg)
    return out
