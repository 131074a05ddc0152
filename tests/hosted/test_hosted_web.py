"""A hosted bot's page in ``arena web``, in a real headless Chromium: its versions with
status and rating, its recent matches with each seat's status, its logs for its owner's
token only, and a version submitted from the page through the gateway."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from hosted_support import REPO, python_bot, register

sys.path.insert(0, str(REPO / "tests" / "web"))

from browser import chromium
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import WebDriverWait
from web_support import get, get_json, web_server

from arena.rigs.processes import GatewayProcess
from arena.server.admin import bot_main
from arena.tournament.executors import InlineExecutor
from arena.tournament.run import run_tournament
from arena.tournament.spec import validate_spec
from arena.tournament.store import ResultStore

ORG = "org-hosted-web"
NOISY = """
import sys
from thousand_bot import Bot


class First(Bot):
    def decide(self, observation, legal):
        print("thinking about", len(legal), "moves", file=sys.stderr)
        return legal[0]
"""



def answer_text(browser: Any, by: str, value: str) -> str:
    """The text of an element of the page that answered a form. That page may still be
    replacing the form's: read it once its document is complete, again if a node went
    stale meanwhile (Chromium: "Node with given id does not belong to the document")."""

    def loaded(driver: Any) -> str | bool:
        try:
            if driver.execute_script("return document.readyState") != "complete":
                return False
            return str(driver.find_element(by, value).text) or False
        except WebDriverException:
            return False

    return str(WebDriverWait(browser, 20).until(loaded))


def submit(browser: Any, form: Any) -> None:
    """Click the form's button and wait until the answering page has replaced the form's.
    While Chromium swaps the documents, asking about the old form can fail with another
    error than "stale" ("unhandled inspector error: ... Cannot find context"): that is the
    swap under way, so it is asked again rather than failing the test."""
    form.find_element(By.TAG_NAME, "button").click()
    WebDriverWait(browser, 20, ignored_exceptions=(WebDriverException,)).until(
        staleness_of(form))


def test_the_hosted_bot_page(scratch: Path) -> None:
    db = f"sqlite:///{scratch / 'results.sqlite3'}"
    gateway = GatewayProcess.start(db_path=scratch / "gateway.sqlite3",
                                   log_path=scratch / "gateway.log", organiser_token=ORG,
                                   extra=["--store", db])
    try:
        token = register(gateway.port, ORG, "alice")
        other = register(gateway.port, ORG, "mallory")
        address = f"127.0.0.1:{gateway.port}"
        assert bot_main(["--gateway", address, "--token", token, "submit", "alice",
                         str(python_bot(scratch, "alice", NOISY))]) == 0
        spec = validate_spec({"name": "web-hosted", "seed": "w", "public_seed": True,
                              "rules": "classic", "participants": ["hosted:alice", "greedy",
                                                                   "random"],
                              "format": "round-robin", "games": 2, "max_deals": 2, "db": db})
        store = ResultStore(db)
        run_tournament(spec, store=store, executor=InlineExecutor())
        with web_server(db, scratch / "web.log", "--gateway", address) as web, \
                chromium() as browser:
            api = get_json(f"{web.url}/api/hosted/alice")
            assert "log" not in json.dumps(api).replace("logs", "")
            [version] = api["versions"]
            assert version["status"] == "passed"
            assert version["ratings"][0]["participant"] == f"alice@{version['short']}"
            assert get(f"{web.url}/api/hosted/nobody")[0] == 404

            browser.get(f"{web.url}/hosted/alice")
            rows = browser.find_elements(By.CSS_SELECTOR, "#versions .version-row")
            assert len(rows) == 1 and "passed" in rows[0].text
            assert f"alice@{version['short']}" in rows[0].text
            runs = browser.find_element(By.ID, "seat-runs").text
            assert runs.count(" ok") >= 2 and "check-" in runs

            def logs_with(token_text: str) -> str:
                browser.get(f"{web.url}/hosted/alice")
                form = browser.find_element(By.ID, "logs-form")
                form.find_element(By.NAME, "token").send_keys(token_text)
                submit(browser, form)
                return answer_text(browser, By.TAG_NAME, "main")

            assert "That token is not the token of alice" in logs_with(other)
            assert "That token is not the token of alice" in logs_with(ORG)
            mine = logs_with(token)
            assert "thinking about" in mine and "Logs of alice" in mine

            archive = scratch / "alice-v2.zip"
            folder = python_bot(scratch, "alice-v2")
            with zipfile.ZipFile(archive, "w") as z:
                for path in folder.iterdir():
                    z.write(path, path.name)
            browser.get(f"{web.url}/hosted/alice")
            form = browser.find_element(By.ID, "submit-form")
            form.find_element(By.NAME, "token").send_keys(token)
            form.find_element(By.NAME, "archive").send_keys(str(archive))
            submit(browser, form)
            text = answer_text(browser, By.ID, "submitted")
            assert text.startswith("New version") and "python" in text
    finally:
        gateway.stop()
