"""Live spectating: a match played by a real Celery worker, watched in a real Chromium.

Every byte the browser receives (page bodies through DevTools, each Server-Sent Event as
it arrives) is checked: no hand, no deck, no seed, and no card before it was shown.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import network_messages, screenshot
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from tournament_support import Worker, redis_server, wait_for
from web_support import REPO, env, get_json, web_server, write_spec

from arena.engine.cards import CARD_NAMES
from arena.observability.live import PUBLIC_EVENTS
from arena.tournament.store import ResultStore

CARD = re.compile(r"\b[789TJQKA][CSHD]\b")


@pytest.fixture()
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


def _spec(tmp: Path, db: str, broker: str, name: str, bot: str, executor: str) -> Path:
    return write_spec(tmp / f"{name}.json", {
        "name": name, "seed": f"{name}-seed", "rules": "classic",
        "participants": [{"name": "slow-a", "bot": bot}, {"name": "slow-b", "bot": bot},
                         {"name": "greedy", "bot": "greedy"}],
        "format": {"type": "round-robin"}, "games": 1, "max_deals": 8,
        "executor": {"type": executor, "broker": broker, "workers": 1}, "db": db})


def _check_public(events: list[dict[str, Any]], replay: dict[str, Any]) -> None:
    """Every event is a public kind with public keys, and a card shows up only once it is
    on the table or in the talon that was turned up."""
    revealed: set[str] = set()
    deal = -1
    actions = 0
    for ev in events:
        assert ev["type"] in PUBLIC_EVENTS, ev
        assert set(ev) <= PUBLIC_EVENTS[ev["type"]], ev
        if ev["type"] == "deal_start":
            deal += 1
            revealed = set()
        elif ev["type"] == "talon":
            revealed |= set(ev["cards"])
        elif ev["type"] == "action":
            actions += 0 if ev.get("auto") else 1  # forced bids are not decisions
            verb, *rest = ev["action"].split(" ")
            if verb in ("play", "marry", "half", "aces", "nines"):
                revealed |= {w for w in rest if CARD.fullmatch(w)}
            else:
                hidden = [w for w in rest if CARD.fullmatch(w)]
                assert not hidden, f"a hidden card in {ev}"
        elif ev["type"] == "trick":
            for _, card in ev["cards"]:
                assert card in revealed, f"{card} in a trick before it was played: {ev}"
        blob = json.dumps(ev)
        for card in CARD.findall(blob):
            if ev["type"] not in ("deal_end", "match_end", "match_start"):
                assert card in revealed, f"{card} reached the browser unplayed: {ev}"
    assert actions == sum(len(d["actions"]) for d in replay["deals"])
    ends = [ev for ev in events if ev["type"] == "deal_end"]
    assert [e["scores"] for e in ends] == [d["scores"] for d in replay["deals"] if "scores" in d]


def _browser_bytes(driver: Any) -> tuple[list[str], list[bytes]]:
    """SSE messages and page bodies the browser received, from its DevTools network log."""
    sse: list[str] = []
    bodies: list[bytes] = []
    code: set[str] = set()  # the page's own scripts and styles hold no data
    for msg in network_messages(driver):
        params = msg.get("params", {})
        if msg["method"] == "Network.responseReceived":
            mime = params["response"].get("mimeType", "")
            if "javascript" in mime or "css" in mime:
                code.add(params["requestId"])
        if msg["method"] == "Network.eventSourceMessageReceived":
            sse.append(params["data"])
        elif msg["method"] == "Network.loadingFinished" and params["requestId"] not in code:
            try:
                body = driver.execute_cdp_cmd("Network.getResponseBody",
                                              {"requestId": params["requestId"]})
            except Exception:
                continue  # an event stream has no body to fetch
            text = body.get("body", "")
            raw = base64.b64decode(text) if body.get("base64Encoded") else text.encode()
            bodies.append(raw)
    return sse, bodies


def test_live_page_shows_a_celery_match_and_never_a_hidden_card(
    redis_url: str, tmp_path: Path, browser: Any
) -> None:
    db = f"sqlite:///{tmp_path / 'live.sqlite3'}"
    ResultStore(db).close()
    worker = Worker(redis_url, tmp_path / "worker.log", name="live",
                    env={"ARENA_TEST_BOT_DELAY": "0.04"})
    run = None
    try:
        worker.wait_ready()
        with web_server(db, tmp_path / "web.log", "--routing", redis_url) as web:
            browser.get(web.url + "/live")
            browser.get_log("performance")  # start the network log here
            spec = _spec(tmp_path, db, redis_url, "live-celery", "tournament_bots:SlowGreedy",
                         "celery")
            run = subprocess.Popen(
                [sys.executable, "-m", "arena.cli", "tournament", "run", str(spec), "--quiet"],
                env=env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            row = WebDriverWait(browser, 60, 0.2).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "#live-matches tr[data-match]"))
            assert "running" in row[0].text and "celery" in row[0].text
            screenshot(browser, "live-list", full=False)
            match_id = row[0].get_attribute("data-match")
            row[0].find_element(By.CSS_SELECTOR, "a.button").click()
            WebDriverWait(browser, 30, 0.1).until(
                lambda d: d.find_elements(By.CSS_SELECTOR, "#steps li"))
            time.sleep(1.0)
            screenshot(browser, "live-match", full=False)
            WebDriverWait(browser, 120, 0.2).until(
                lambda d: d.find_element(By.ID, "spectator").get_attribute("data-ended") == "1")
            assert "ended: completed" in browser.find_element(By.ID, "live-state").text
            sse, bodies = _browser_bytes(browser)
            assert run.wait(timeout=120) == 0, run.stdout.read() if run.stdout else ""
            with ResultStore(db) as store:
                rec = store.get(match_id, with_replay=True)
            assert rec is not None and rec.replay is not None
            events = [e for data in sse for e in json.loads(data) if isinstance(data, str)
                      and data.startswith("[")]
            assert events[0]["type"] == "match_start" and events[-1]["type"] == "match_end"
            _check_public(events, rec.replay)
            assert any(match_id.encode() in b for b in bodies), "no page body was logged"
            assert len(sse) > 10
            everything = b"\n".join(bodies) + "\n".join(sse).encode()
            assert rec.seed.encode() not in everything
            for word in (b'"deck"', b'"hand"', b'"hands"', b'"dealt"', b'"seed"'):
                assert word not in everything, word
            first_deck = rec.replay["deals"][0]["deck"]
            assert " ".join(first_deck[:8]).encode() not in everything
            assert set(first_deck) <= set(CARD_NAMES)
            # A spectator asking for a delay gets nothing newer than that.
            api = get_json(f"{web.url}/api/live/{match_id}")
            assert api["state"] == "ended" and api["executor"] == "celery"
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        worker.stop()


def test_local_pool_without_redis_feeds_the_web_process(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'local.sqlite3'}"
    ResultStore(db).close()
    spec = _spec(tmp_path, db, "redis://127.0.0.1:1/0", "live-local",
                 "tournament_bots:SlowGreedy", "local")
    with web_server(db, tmp_path / "web.log") as web:
        run = subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "tournament", "run", str(spec), "--quiet"],
            env=env(ARENA_TEST_BOT_DELAY="0.01"), cwd=REPO)
        try:
            live = wait_for(lambda: [m for m in get_json(web.url + "/api/live")["matches"]
                                     if m["state"] == "running"], timeout=60, what="live match")
            assert live[0]["executor"] == "local" and live[0]["tournament"] == "live-local"
            assert "seed" not in live[0]
            assert run.wait(timeout=120) == 0
            ended = wait_for(lambda: [m for m in get_json(web.url + "/api/live")["matches"]
                                      if m["state"] == "ended"], timeout=30, what="ended")
            assert ended[0]["match_id"] == live[0]["match_id"]
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()


def test_delayed_spectator_gets_events_no_sooner_than_asked(tmp_path: Path) -> None:
    """Reads the event stream itself: with ?delay=2 the first event comes 2 s after it
    was published (on a finished match all events are older, so they come at once)."""
    import urllib.request

    db = f"sqlite:///{tmp_path / 'delay.sqlite3'}"
    ResultStore(db).close()
    spec = _spec(tmp_path, db, "redis://127.0.0.1:1/0", "live-delay",
                 "tournament_bots:SlowGreedy", "inline")
    with web_server(db, tmp_path / "web.log") as web:
        run = subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "tournament", "run", str(spec), "--quiet"],
            env=env(ARENA_TEST_BOT_DELAY="0.01"), cwd=REPO)
        try:
            live = wait_for(lambda: get_json(web.url + "/api/live")["matches"], timeout=60,
                            what="live match")
            match_id = live[0]["match_id"]
            with urllib.request.urlopen(f"{web.url}/api/live/{match_id}/events?delay=2",
                                        timeout=60) as r:
                started = time.time()
                for raw in r:
                    line = raw.decode()
                    if line.startswith("data: ["):
                        first = json.loads(line[6:])[0]
                        break
            assert first["type"] == "match_start"
            assert time.time() - live[0]["started_at"] >= 2.0 - 0.05
            assert started > 0
            run.wait(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()


def test_spectators_beyond_the_limit_are_told_to_retry(tmp_path: Path) -> None:
    import asyncio
    import threading
    import urllib.error
    import urllib.request

    from arena.match.types import MatchSpec
    from arena.observability.live import publishing
    from arena.tournament.model import ScheduledMatch

    db = f"sqlite:///{tmp_path / 'limit.sqlite3'}"
    ResultStore(db).close()
    match = ScheduledMatch("limit", 0, "g", 0, ("a", "b", "c"), MatchSpec(
        "limit-match", {"preset": "classic", "options": {}}, "secret-seed",
        ("greedy", "random", "random")))
    with publishing(match, executor="inline", worker="here", redis_url=None,
                    db_url=db) as pub, web_server(db, tmp_path / "web.log",
                                                  "--max-spectators", "1") as web:
        assert pub is not None
        asyncio.run(pub({"type": "match_start", "match_id": "limit-match", "seats": ["a"],
                         "hand": ["AS"], "seed": "secret-seed"}))
        first = urllib.request.urlopen(f"{web.url}/api/live/limit-match/events", timeout=30)
        got: list[str] = []
        def read_lines() -> None:
            with contextlib.suppress(Exception):  # the stream is closed under it at the end
                for _ in range(12):
                    got.append(first.readline().decode())

        reader = threading.Thread(target=read_lines, daemon=True)
        reader.start()
        wait_for(lambda: any(line.startswith("data: [") for line in got), what="first events")
        # Only public keys left the web process: no hand, no seed.
        data = next(line for line in got if line.startswith("data: ["))
        assert "hand" not in data and "secret-seed" not in data and "match_start" in data
        try:
            urllib.request.urlopen(f"{web.url}/api/live/limit-match/events", timeout=30)
            raise AssertionError("a second spectator was let in")
        except urllib.error.HTTPError as exc:
            assert exc.code == 503 and exc.headers["Retry-After"] == "10"
        first.close()
