"""Helpers for the browser tests: logging in, selecting text by code-point offsets, and
finding demo units whose texts exercise Unicode.

Offsets in Claimgate are Unicode code points (Python ``str`` indices); the DOM counts
UTF-16 code units. The selection helpers take code points, convert them in the page and
build a DOM Range over the element's text nodes, so a test can say "select
``text[start:end]``" with Python's indices and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

# Runs in the page. Maps code-point offsets in ``root``'s text (its textContent, which is
# what an annotator sees, highlights included) to a (text node, UTF-16 offset) pair each
# and returns a Range. An offset on the boundary of two text nodes goes to the end of the
# earlier node for the range's end and to the start of the later node for its start, so
# that the range never reaches into a neighbouring element.
_RANGE_JS = """
window.__cgRange = (root, start, end) => {
  const text = root.textContent;
  const points = Array.from(text);
  if (!(0 <= start && start < end && end <= points.length)) {
    throw new Error(`offsets [${start}, ${end}) outside 0..${points.length}`);
  }
  const unit = (cp) => points.slice(0, cp).join("").length;
  const [u0, u1] = [unit(start), unit(end)];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let seen = 0, startPos = null, endPos = null, node;
  while ((node = walker.nextNode())) {
    const len = node.data.length;
    if (startPos === null && u0 < seen + len) startPos = [node, u0 - seen];
    if (endPos === null && u1 <= seen + len) endPos = [node, u1 - seen];
    seen += len;
    if (startPos && endPos) break;
  }
  const range = document.createRange();
  range.setStart(...startPos);
  range.setEnd(...endPos);
  return range;
};
"""

_SELECT_JS = """
([selector, start, end]) => {
  const root = document.querySelector(selector);
  if (!root) throw new Error(`no element ${selector}`);
  const range = window.__cgRange(root, start, end);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  const rects = range.getClientRects();
  const last = rects[rects.length - 1];
  const at = {bubbles: true, cancelable: true, view: window,
              clientX: last.right, clientY: last.bottom, button: 0};
  // What a mouse selection would end with: the page may listen to either.
  root.dispatchEvent(new MouseEvent("mouseup", at));
  document.dispatchEvent(new Event("selectionchange"));
  return selection.toString();
}
"""

# Points inside the first and the last selected character, each on the side that puts
# the caret at the range's edge (left quarter of the first, right quarter of the last):
# where a person's mouse drag starts and ends. Left-to-right text only.
_DRAG_POINTS_JS = """
([selector, start, end]) => {
  const root = document.querySelector(selector);
  root.scrollIntoView({block: "center"});
  const first = window.__cgRange(root, start, start + 1).getBoundingClientRect();
  const last = window.__cgRange(root, end - 1, end).getBoundingClientRect();
  return {
    from: {x: first.left + first.width * 0.25, y: first.top + first.height / 2},
    to: {x: last.right - last.width * 0.25, y: last.top + last.height / 2},
  };
}
"""


def install_range_helper(page: Any) -> None:
    if not page.evaluate("() => typeof window.__cgRange === 'function'"):
        page.evaluate(f"() => {{ {_RANGE_JS} }}")


def select_text(page: Any, selector: str, start: int, end: int) -> str:
    """Select code points ``[start, end)`` of the element's text, as a script would; the
    returned string is what the browser reports as selected."""
    install_range_helper(page)
    return page.evaluate(_SELECT_JS, [selector, start, end])


def drag_points(page: Any, selector: str, start: int, end: int) -> dict[str, dict[str, float]]:
    """Where a mouse drag over code points ``[start, end)`` starts and ends (``from`` and
    ``to``, each ``{x, y}`` in the viewport), after scrolling the element into view."""
    install_range_helper(page)
    return page.evaluate(_DRAG_POINTS_JS, [selector, start, end])


def drag_select(page: Any, selector: str, start: int, end: int) -> str:
    """Select code points ``[start, end)`` with a real mouse drag (press, move, release)."""
    points = drag_points(page, selector, start, end)
    page.mouse.move(points["from"]["x"], points["from"]["y"])
    page.mouse.down()
    page.mouse.move(points["to"]["x"], points["to"]["y"], steps=8)
    page.mouse.up()
    return page.evaluate("() => window.getSelection().toString()")


def select_and_click(page: Any, selector: str, start: int, end: int, button: str) -> None:
    """Select code points ``[start, end)`` and click ``button`` in one go, before the page
    has had a moment to notice the new selection (a quick person on a slow machine)."""
    install_range_helper(page)
    page.evaluate(
        """([selector, start, end, button]) => {
          const range = window.__cgRange(document.querySelector(selector), start, end);
          const selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
          document.querySelector(button).click();
        }""",
        [selector, start, end, button],
    )


def clear_selection(page: Any) -> None:
    page.evaluate("() => window.getSelection().removeAllRanges()")


def login(page: Any, username: str, password: str) -> None:
    """Log in through the login form, as a person does."""
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")


def login_fast(context: Any, user: Any, base_url: str) -> None:
    """Give the browser context a logged-in session cookie for ``user`` without the form."""
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": base_url}]
    )


@dataclass(frozen=True)
class Needle:
    """A substring to select in a snapshot, found by Python's own ``str.index``."""

    snapshot: str  # "query", "answer" or "source"
    text: str

    def offsets(self, haystack: str) -> tuple[int, int]:
        start = haystack.index(self.text)
        return start, start + len(self.text)


def has_astral(text: str) -> bool:
    """True when ``text`` holds a character outside the Basic Multilingual Plane (most
    emoji): one code point, two UTF-16 code units."""
    return any(ord(char) > 0xFFFF for char in text)


# --- the demo's units and the annotation forms --------------------------------------


def unit_where(study: Any, **lookups: Any) -> Any:
    """The first unit of ``study`` matching ORM ``lookups`` (e.g. on its tuple's source
    text or its observation's answer text)."""
    from audit.archive.models import Unit

    unit = Unit.objects.filter(study=study, **lookups).order_by("id").first()
    assert unit is not None, f"no unit of {study.slug} with {lookups}"
    return unit


def assign(unit: Any, user: Any) -> Any:
    """Give ``user`` a slot on ``unit``, as the queue would (the slot counted on the unit),
    so that a test opens a known unit instead of whatever the queue hands out next."""
    from tests.annotation.conftest import assign as assign_slot

    return assign_slot(unit, user)


def texts_of(unit: Any) -> dict[str, Any]:
    """The unit's snapshot texts as the record holds them: query, answer, and the tuple's
    source (``source``) or every source of an answer unit by digest (``sources``)."""
    from annotator.labelling.selectors import unit_content

    content = unit_content(unit=unit)
    texts: dict[str, Any] = {
        "query": content.query["text"],
        "answer": content.answer["text"],
        "sources": {source["digest"]: source["text"] for source in content.sources},
    }
    if unit.tuple_id is not None:
        texts["source"] = content.source["text"]
    return texts


def source_names(unit: Any) -> dict[str, str]:
    """An answer unit's sources by digest, each with the snapshot name the form shows it
    under (``source:N``, N from 0 in answer order)."""
    from annotator.labelling.selectors import unit_content

    return {
        source["digest"]: f"source:{index}"
        for index, source in enumerate(unit_content(unit=unit).sources)
    }


def open_form(page: Any, assignment: Any) -> None:
    """Open an assignment's form and wait until its script has taken over (the snapshot
    texts are set from the page data and the draft status is shown)."""
    page.goto(f"/assignments/{assignment.pk}/")
    wait_for_form(page)


def expect_left_form(page: Any, assignment: Any) -> None:
    """After a submission the page moves on: to the annotator's next item, or to their
    list when nothing is left (or that is their setting), never back to the same form."""
    import re

    from playwright.sync_api import expect

    expect(page).to_have_url(re.compile(r"/assignments/\d+/$|/annotate/$"))
    assert not page.url.endswith(f"/assignments/{assignment.pk}/"), page.url


def wait_for_form(page: Any) -> None:
    """Wait until the form's script has taken over the page (see ``open_form``)."""
    page.wait_for_function(
        "() => document.getElementById('draft-payload').value !== ''"
        " || !document.getElementById('restore-notice').hidden"
    )


def autosave_of(page: Any, check: Callable[[dict[str, Any]], bool]) -> Any:
    """Wait (a ``with`` block) for the answer to the autosave whose draft satisfies
    ``check``: the one that carries a given change, not whichever autosave answers next
    (on a busy machine an earlier one may still be on its way)."""

    def carries(response: Any) -> bool:
        request = response.request
        if request.method != "POST" or not response.url.endswith("/draft"):
            return False
        payload = parse_qs(request.post_data or "").get("payload", [""])[0]
        return bool(payload) and check(json.loads(payload))

    return page.expect_response(carries)


class HeldRequests:
    """Requests to a URL pattern that the browser sends but the test holds back until
    ``release()``: the page's state while they are on their way, made to last."""

    def __init__(self, page: Any, pattern: str) -> None:
        self.page = page
        self.pattern = pattern
        self.routes: list[Any] = []
        page.route(pattern, self._hold)

    def _hold(self, route: Any) -> None:
        self.routes.append(route)

    def release(self) -> None:
        """Let the held requests go, and every later one straight through."""
        held, self.routes = self.routes, []
        for route in held:
            route.continue_()
        self.page.unroute(self.pattern, self._hold)


def snapshot_selector(snapshot: str, digest: str | None = None) -> str:
    if digest is None:
        return f'[data-snapshot="{snapshot}"]'
    return f'[data-snapshot="{snapshot}"][data-source-digest="{digest}"]'


def expected_span(snapshot: str, text: str, needle: str) -> dict[str, Any]:
    """The span a selection of ``needle`` must give, computed with Python's own indices."""
    start = text.index(needle)
    end = start + len(needle)
    assert text[start:end] == needle
    return {"snapshot": snapshot, "start": start, "end": end, "quote": needle}
