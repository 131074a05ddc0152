"""Pages that agree with themselves and with the rest of the arena, on the real web server
and in the real Chromium: the interval note names the unit the bootstrap resamples, a
player has one colour on a page, and deals are numbered from 0 as in the text record."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from typing import Any

from selenium.webdriver.common.by import By
from web_support import get

from arena.engine import replay as rp
from arena.tournament.store import ResultStore

SVG = "{http://www.w3.org/2000/svg}"


def page(url: str) -> str:
    status, body = get(url)
    assert status == 200, (url, status)
    return body.decode()


def charts(html: str) -> dict[str, ET.Element]:
    return {m.group(1): ET.fromstring(m.group(0))
            for m in re.finditer(r'<svg [^>]*aria-label="([^"]+)".*?</svg>', html, re.S)}


def test_the_interval_note_names_what_the_bootstrap_resamples(web: Any) -> None:
    assert "bootstrap over games" in page(f"{web.url}/tournaments/preset-classic")
    assert "bootstrap over duplicate sets" in page(f"{web.url}/tournaments/web-duplicate")


def test_a_player_keeps_its_colour_from_chart_to_chart(web: Any) -> None:
    found = charts(page(f"{web.url}/tournaments/web-duplicate"))
    intervals, history = found["ratings with 95% intervals"], found["rating history"]
    by_interval: dict[str, str] = {}
    name = None
    for node in intervals:  # a row: its name, its bar, its dot
        if node.tag == f"{SVG}text" and node.get("class") == "legend" and node.get(
                "text-anchor") == "end":
            name = node.text
        elif node.tag == f"{SVG}circle" and name is not None:
            by_interval[name] = str(node.get("fill"))
            name = None
    by_history: dict[str, str] = {}
    colour = None
    for node in history:  # a legend entry: its swatch, then its name
        if node.tag == f"{SVG}rect":
            colour = node.get("fill")
        elif node.tag == f"{SVG}text" and node.get("class") == "legend" and colour:
            by_history[str(node.text)] = colour
            colour = None
    assert len(by_interval) == 3 and by_history, (by_interval, by_history)
    for player, seen in by_history.items():
        assert by_interval[player] == seen, (player, by_interval, by_history)


def test_the_viewer_numbers_deals_from_0_as_the_text_record_does(
    filled_store: dict[str, Any], web: Any, browser: Any
) -> None:
    with ResultStore(filled_store["db"]) as store:
        rec = next(store.iter_results("preset-classic", with_replay=True))
    assert rec.replay is not None
    deals = len(rec.replay["deals"])
    assert "Deal 0" in rp.show(rec.replay)  # the text record, as arena replay show prints it
    browser.get(f"{web.url}/matches/{rec.match_id}?at=0.0")
    deadline = time.monotonic() + 30
    while "ready" not in (browser.find_element(By.ID, "viewer").get_attribute("class") or ""):
        assert time.monotonic() < deadline, "the viewer never became ready"
        time.sleep(0.05)
    position = browser.find_element(By.ID, "position").text
    assert position.startswith(f"deal 0 ({deals} deals: 0-{deals - 1})"), position
    options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#deal-select option")]
    assert options[0].startswith("deal 0") and len(options) == deals
    told = browser.find_element(By.ID, "last-action").text
    assert told.startswith("Deal 0 dealt by"), told
    record = page(f"{web.url}/api/matches/{rec.match_id}/record")
    assert "Deal 0" in record and f"Deal {deals}" not in record
