"""Browser tests: Playwright for Python driving Debian's headless Chromium (never a
downloaded browser) against pytest-django's live server with the demo loaded.

Without /usr/bin/chromium the tests skip with one line, except under CI=true, where that
is a failure.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CI = os.environ.get("CI", "").strip().lower() == "true"
VIEWPORT = {"width": 1440, "height": 900}
#: Playwright's wait for a condition (milliseconds): generous for a slow CI machine, far
#: below the test's own budget.
TIMEOUT_MS = 5_000
ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"


def _missing_chromium() -> None:
    reason = f"browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)"
    if CI:
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One Chromium per test module (launching takes about half a second).

    The sync Playwright API keeps an asyncio loop marked as running in this thread for as
    long as it is started, and Django then refuses every ORM call ("async context"): the
    tests' own ORM calls between two page actions are plain synchronous calls, so Django's
    check is switched off while Playwright runs, and only then. Scoping the browser to the
    module (not the session) stops Playwright after the last browser test of a module, so
    that the rest of the suite runs with no loop and with Django's check on.
    """
    if not CHROMIUM.exists():
        _missing_chromium()
    from playwright.sync_api import sync_playwright

    previous = os.environ.get(ASYNC_UNSAFE)
    os.environ[ASYNC_UNSAFE] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                yield chromium
            finally:
                chromium.close()
    finally:
        if previous is None:
            os.environ.pop(ASYNC_UNSAFE, None)
        else:
            os.environ[ASYNC_UNSAFE] = previous


@dataclass
class Demo:
    """The demo loaded into the test database, served by the live server."""

    url: str
    studies: dict
    users: dict


@pytest.fixture(scope="session")
def warm_live_server(live_server) -> str:
    """The live server once it has answered a page: Django imports the URLconf (and with
    it every view module) on the first request, which on a busy machine takes seconds,
    and a browser's first navigation must not race that."""
    from urllib.request import urlopen

    from django.urls import reverse

    reverse("login")  # imports the URLconf in this process, which the server thread shares
    # A ceiling for a hung server, not a measure of speed.
    with urlopen(live_server.url + reverse("login"), timeout=300) as response:  # noqa: S310
        assert response.status == 200, response.status
    return live_server.url


@pytest.fixture
def demo(warm_live_server, transactional_db) -> Demo:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from audit.archive.models import Study

    # Unlabelled: the browser tests label the units they choose.
    call_command("load_demo", "--allow-without-debug", "--without-labels", stdout=io.StringIO())
    users = {user.username: user for user in get_user_model().objects.all()}
    studies = {study.slug: study for study in Study.objects.select_related("codebook")}
    return Demo(url=warm_live_server, studies=studies, users=users)


@pytest.fixture
def readme_demo(warm_live_server, transactional_db) -> Iterator[str]:
    """`make demo`: the demo with its labels, Celery eager as in the embedded default
    (whatever broker the test run points at: no worker runs beside this test)."""
    from celery import current_app
    from django.core.management import call_command

    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    try:
        call_command("load_demo", "--allow-without-debug", stdout=io.StringIO())
        yield warm_live_server
    finally:
        current_app.conf.task_always_eager = eager


@dataclass
class PageEvents:
    """What the page did besides rendering: dialogs opened (and dismissed), uncaught
    errors, console errors. Tests assert on these."""

    dialogs: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    console_errors: list = field(default_factory=list)


@pytest.fixture
def context(browser, demo):
    context = browser.new_context(viewport=VIEWPORT, base_url=demo.url)
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(context):
    return context.new_page()


@pytest.fixture
def events(page) -> PageEvents:
    events = PageEvents()

    def on_dialog(dialog) -> None:
        events.dialogs.append((dialog.type, dialog.message))
        dialog.dismiss()

    def on_console(message) -> None:
        # The browser asks for /favicon.ico on its own; the pages name none.
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            events.console_errors.append(message.text)

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: events.page_errors.append(str(error)))
    page.on("console", on_console)
    return events
