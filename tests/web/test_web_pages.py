"""A real Chromium against a real ``arena web`` on a store filled by real tournaments."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from browser import screenshot
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait
from web_support import arena, get, get_json

from arena.engine import PRESETS, Game, Rules
from arena.engine.actions import parse_action
from arena.engine.cards import cards_str
from arena.tournament.leaderboard import interval_text
from arena.tournament.store import ResultStore


def _wait(driver: Any, cond: Any, timeout: float = 30) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(cond)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


@pytest.mark.parametrize("tournament", ["web-duplicate", "web-sprt"])
def test_leaderboard_shows_the_numbers_of_arena_leaderboard(
    filled_store: dict[str, Any], web: Any, browser: Any, tournament: str
) -> None:
    cli = json.loads(arena("leaderboard", "--db", filled_store["db"], "--tournament",
                           tournament, "--json").stdout)
    assert cli["rows"], cli
    assert get_json(f"{web.url}/api/tournaments/{tournament}/leaderboard") == cli
    browser.get(f"{web.url}/tournaments/{tournament}")
    rows = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr"))
    seen = []
    for tr in rows:
        cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        seen.append(cells)
    def interval(r: dict[str, Any], adj: str = "") -> str:
        nan = float("nan")
        return interval_text(*(nan if r[f"{adj}{k}"] is None else r[f"{adj}{k}"]
                               for k in ("rating", "ci_low", "ci_high")), r[f"{adj}bounded"])

    # Raw and luck-adjusted ratings and intervals, as arena leaderboard prints them.
    want = [[str(r["rank"]), r["player"], r["bot"], _fmt(r["rating"]), interval(r),
             _fmt(r["adj_rating"]), interval(r, "adj_"), str(r["games"])]
            for r in cli["rows"]]
    # (HTML shows a run of spaces as one.)
    assert [c[:8] for c in seen] == [[" ".join(x.split()) for x in w] for w in want]
    text = arena("leaderboard", "--db", filled_store["db"], "--tournament", tournament).stdout
    flat = " ".join(text.split())  # the table pads its columns
    assert all(" ".join(w[4].split()) in flat and " ".join(w[6].split()) in flat
               for w in want), text
    assert [c[10:14] for c in seen] == [
        [str(r["timeouts"]), str(r["illegal"]), str(r["strikes"]), str(r["forfeits"])]
        for r in cli["rows"]]
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart"), "no rating charts"
    if tournament == "web-sprt":
        decision = browser.find_element(By.ID, "sprt-decision").text
        api = get_json(f"{web.url}/api/tournaments/{tournament}/sprt")
        assert decision == api["decision"] == "H1 accepted"
        assert api["llr"] >= api["upper"]
        summary = arena("tournament", "status", str(filled_store["specs"]["web-sprt"]))
        assert "web-sprt" in summary.stdout
    # However wide the leaderboard grows, the page itself does not scroll sideways: only
    # the table's own box does, so the sections below keep the window's width.
    assert browser.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    ) <= 0
    screenshot(browser, f"tournament-{tournament}")


def _expected_hands(replay: dict[str, Any], deal: int, step: int) -> list[list[str]]:
    """Every seat's hand at (deal, step), from the engine alone."""
    game = Game(Rules.from_json(replay["rules"]), seed=replay["seed"],
                dealer=int(replay.get("first_dealer", 0)))
    for i, d in enumerate(replay["deals"]):
        game.deal(d.get("deck"))
        actions = d["actions"] if i < deal else d["actions"][:step]
        for item in actions:
            game.apply(parse_action(item[1]))
        if i == deal:
            break
    return [cards_str(h) for h in game.hands]


def _shown_hands(driver: Any, seats: int) -> list[list[str]]:
    out = []
    for s in range(seats):
        cards = driver.find_elements(
            By.CSS_SELECTOR, f".seat-panel[data-seat='{s}'] .seat-hand .card")
        out.append([c.get_attribute("data-card") for c in cards])
    return out


def _position(driver: Any) -> tuple[int, int]:
    root = driver.find_element(By.ID, "viewer")
    return int(root.get_attribute("data-deal")), int(root.get_attribute("data-step"))


@pytest.mark.parametrize("preset", list(PRESETS))
def test_replay_viewer_steps_through_a_match_of_every_preset(
    filled_store: dict[str, Any], web: Any, browser: Any, preset: str
) -> None:
    with ResultStore(filled_store["db"]) as store:
        rec = next(store.iter_results(f"preset-{preset}", with_replay=True))
    replay = rec.replay
    assert replay is not None
    n = len(replay["seats"])
    # A position in the middle of the last deal, opened straight from the URL.
    deal = len(replay["deals"]) - 1
    step = max(1, len(replay["deals"][deal]["actions"]) // 2)
    browser.get(f"{web.url}/matches/{rec.match_id}?at={deal}.{step}")
    _wait(browser, lambda d: "ready" in d.find_element(By.ID, "viewer").get_attribute("class"))
    assert _position(browser) == (deal, step)
    assert _shown_hands(browser, n) == _expected_hands(replay, deal, step)
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".seat-panel .name")]
    assert names == rec.players
    # Cards are drawn with their suit colours.
    red = browser.find_elements(By.CSS_SELECTOR, ".seat-hand .card.red")
    for c in red:
        assert c.get_attribute("data-card")[-1] in "HD"
        assert c.value_of_css_property("color") == "rgba(200, 16, 46, 1)"
    screenshot(browser, f"replay-{preset}", full=False)
    # Keyboard: right steps on, left steps back, down goes to the next deal, Home to its start.
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    _wait(browser, lambda d: _position(d) == (deal, step + 1))
    assert _shown_hands(browser, n) == _expected_hands(replay, deal, step + 1)
    assert f"at={deal}.{step + 1}" in browser.current_url
    body.send_keys(Keys.ARROW_LEFT)
    body.send_keys(Keys.ARROW_LEFT)
    _wait(browser, lambda d: _position(d) == (deal, step - 1))
    assert _shown_hands(browser, n) == _expected_hands(replay, deal, step - 1)
    body.send_keys(Keys.ARROW_UP)
    _wait(browser, lambda d: _position(d) == (max(0, deal - 1), 0))
    assert _shown_hands(browser, n) == _expected_hands(replay, max(0, deal - 1), 0)
    body.send_keys(Keys.END)
    last = len(replay["deals"][max(0, deal - 1)]["actions"])
    _wait(browser, lambda d: _position(d) == (max(0, deal - 1), last))
    assert _shown_hands(browser, n) == _expected_hands(replay, max(0, deal - 1), last)
    body.send_keys(Keys.HOME)
    _wait(browser, lambda d: _position(d) == (max(0, deal - 1), 0))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
              and "favicon" not in e["message"]]
    assert not errors, errors


def test_replay_marks_fallbacks_and_strikes(
    filled_store: dict[str, Any], web: Any, browser: Any
) -> None:
    page = get_json(f"{web.url}/api/matches?tournament=web-duplicate&illegal=1&per_page=200")
    assert page["total"] > 0, "the blundering bot never blundered"
    m = page["matches"][0]
    with ResultStore(filled_store["db"]) as store:
        rec = store.get(m["match_id"], with_replay=True)
    assert rec is not None and rec.replay is not None
    where = next((i, j) for i, d in enumerate(rec.replay["deals"])
                 for j, a in enumerate(d["actions"]) if len(a) > 2)
    browser.get(f"{web.url}/matches/{rec.match_id}?at={where[0]}.{where[1] + 1}")
    _wait(browser, lambda d: "ready" in d.find_element(By.ID, "viewer").get_attribute("class"))
    mark = browser.find_element(By.CSS_SELECTOR, "#last-action .fallback")
    assert "fallback after illegal" in mark.text and "strike 1" in mark.text
    assert "1 strike" in browser.find_element(
        By.CSS_SELECTOR, f".seat-panel[data-seat='{rec.players.index('blunder')}']").text
    screenshot(browser, "replay-fallback", full=False)


def test_match_list_filters_and_links_to_replays(
    filled_store: dict[str, Any], web: Any, browser: Any
) -> None:
    with ResultStore(filled_store["db"]) as store:
        everything = list(store.iter_results())
    browser.get(f"{web.url}/matches")
    rows = browser.find_elements(By.CSS_SELECTOR, "#matches tbody tr")
    assert len(rows) == min(50, len(everything))
    assert f"{len(everything)} matches" in browser.find_element(By.ID, "count").text
    screenshot(browser, "matches")
    # Filter by bot and status through the form, as a person would.
    browser.find_element(By.NAME, "bot").send_keys("blunder")
    browser.find_element(By.CSS_SELECTOR, "select[name=status] option[value=forfeit]").click()
    browser.find_element(By.CSS_SELECTOR, "form.filters button").click()
    _wait(browser, lambda d: "bot=blunder" in d.current_url)
    want = [r for r in everything if "blunder" in r.players and r.status == "forfeit"]
    assert want, "no forfeit to filter on"
    count = browser.find_element(By.ID, "count").text
    assert count.startswith(f"{len(want)} match")
    for cb, key in (("forfeits", lambda r: r.forfeit_seat is not None),
                    ("timeouts", lambda r: sum(r.timeouts) > 0),
                    ("illegal", lambda r: sum(r.illegal) > 0)):
        api = get_json(f"{web.url}/api/matches?{cb}=1&per_page=200")
        assert api["total"] == sum(1 for r in everything if key(r)), cb
    api = get_json(f"{web.url}/api/matches?bot=greedy&tournament=web-duplicate&per_page=200")
    assert api["total"] == sum(1 for r in everything
                               if r.tournament == "web-duplicate" and "greedy" in r.players)
    assert all("greedy" in m["players"] for m in api["matches"])
    link = browser.find_element(By.CSS_SELECTOR, "#matches tbody tr a.button")
    link.click()
    _wait(browser, lambda d: "ready" in d.find_element(By.ID, "viewer").get_attribute("class"))
    assert "/matches/" in browser.current_url


def test_bot_pages_and_tournament_list(
    filled_store: dict[str, Any], web: Any, browser: Any
) -> None:
    browser.get(web.url + "/")
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#tournaments td a b")]
    assert "web-duplicate" in names and "web-sprt" in names
    assert sum(1 for n in names if n.startswith("preset-")) == len(PRESETS)
    screenshot(browser, "tournaments")
    browser.get(web.url + "/bots")
    screenshot(browser, "bots")
    browser.get(web.url + "/bots/blunder")
    text = browser.find_element(By.TAG_NAME, "main").text
    api = get_json(f"{web.url}/api/bots/blunder")
    totals = api["tournaments"][0]["totals"]
    assert totals["illegal"] > 0 and totals["strikes"] >= totals["illegal"]
    assert "ILLEGAL / MALFORMED" in text.upper()
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart")) >= 2
    screenshot(browser, "bot-blunder")
    browser.get(web.url + "/api")
    assert "/api/matches/{match_id}/frames" in browser.find_element(By.TAG_NAME, "main").text
    screenshot(browser, "api")
    status, body = get(web.url + "/openapi.json")
    assert status == 200 and "/api/live/{match_id}/events" in json.loads(body)["paths"]
    assert get(web.url + "/api/matches/nope")[0] == 404
    assert get(web.url + "/api/tournaments/nope/leaderboard")[0] == 404
    assert get(web.url + "/api/matches?status=weird")[0] == 422
    assert get(web.url + "/matches/..%2F..%2Fetc")[0] == 404


def test_replay_export_writes_files_that_verify(filled_store: dict[str, Any], tmp_path: Any
                                                ) -> None:
    db = filled_store["db"]
    with ResultStore(db) as store:
        recs = list(store.iter_results("web-duplicate"))
    out = tmp_path / "one"
    res = arena("replay", "export", "--db", db, recs[0].match_id[:10], "--out", str(out))
    assert "wrote 1 replay and text record to" in res.stdout
    path = out / f"{recs[0].match_id}.json"
    assert arena("replay", "verify", str(path)).stdout.startswith("OK:")
    text = (out / f"{recs[0].match_id}.txt").read_text()
    assert "Deal 0" in text and "Result (" in text
    out = tmp_path / "all"
    res = arena("replay", "export", "--db", db, "--tournament", "web-duplicate", "--out",
                str(out))
    assert len(list(out.glob("*.json"))) == len(recs) == len(list(out.glob("*.txt")))
    for args, msg in (((db, "ffffffffffff"), "no match"),
                      ((db, "--tournament", "nope"), "no tournament 'nope'")):
        bad = arena("replay", "export", "--db", *args, check=False)
        assert bad.returncode == 2 and msg in bad.stderr and "Traceback" not in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def test_web_refuses_bad_input_in_one_line(filled_store: dict[str, Any], web: Any) -> None:
    for args, msg in ((("--db", "postgresql://127.0.0.1:1/none"), "cannot connect"),
                      (("--db", filled_store["db"], "--port", str(web.port)), "cannot listen"),
                      (("--db", "mysql://x"), "unsupported database URL"),
                      (("--db", filled_store["db"], "--port", "0"), "--port")):
        res = arena("web", *args, check=False, timeout=60)
        assert res.returncode == 2, res
        assert msg in res.stderr and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_pages_answer_quickly_enough_to_be_usable(web: Any) -> None:
    """Not a timing test: every page answers 200 (the benchmark measures latency)."""
    t0 = time.monotonic()
    for path in ("/", "/matches", "/live", "/bots", "/api", "/tournaments/web-duplicate"):
        assert get(web.url + path)[0] == 200, path
    assert time.monotonic() - t0 < 120


def test_html_report_has_matches_sprt_and_head_to_head(
    filled_store: dict[str, Any], web: Any, browser: Any, tmp_path: Any
) -> None:
    out = tmp_path / "report.html"
    arena("report", "--db", filled_store["db"], "--out", str(out), "--web-url", web.url,
          "--matches", "30")
    text = out.read_text()
    assert "<h2>Head to head</h2>" in text
    assert "SPRT web-sprt: greedy against random" in text and "H1 accepted" in text
    assert text.count(f"href='{web.url}/matches/") == 30
    browser.get(out.as_uri())
    # Every table fits the report's column or scrolls in a box of its own, and no line of
    # the leaderboard is folded (an interval split over three lines cannot be read).
    assert browser.execute_script(
        "const body = document.body.getBoundingClientRect();"
        "return [...document.querySelectorAll('table')].filter(t =>"
        " getComputedStyle(t.parentElement).overflowX !== 'auto'"
        " && t.getBoundingClientRect().right > body.right + 1).length") == 0
    assert browser.execute_script(
        "const rows = [...document.querySelector('table').querySelectorAll('tbody tr')];"
        "const em = parseFloat(getComputedStyle(rows[0]).fontSize);"
        "return rows.filter(r => r.getBoundingClientRect().height > 2.5 * em).length") == 0
    screenshot(browser, "report")
    link = browser.find_element(By.CSS_SELECTOR, f"a[href^='{web.url}/matches/']")
    link.click()
    _wait(browser, lambda d: "ready" in d.find_element(By.ID, "viewer").get_attribute("class"))
    screenshot(browser, "report-link-to-replay", full=False)
