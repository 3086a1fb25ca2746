"""No template relies on what the CSP refuses: inline script code, inline event handlers,
style attributes or <style> elements. A `<script src=...>` and a data block
(`<script type="application/json">`) are fine."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
DATA_TYPES = {"application/json", "application/ld+json"}
# An attribute the policy blocks, also where template tags wrap it ({% if %}style="...").
BLOCKED_ATTRIBUTE = re.compile(r"(?<![\w-])(on[a-z]+|style)\s*=", re.IGNORECASE)
TEMPLATE_COMMENT = re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}|{#.*?#}", re.DOTALL)


class InlineCodeFinder(HTMLParser):
    """Collects each construct the policy would block, with its line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._inline_script_at: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        names = {name.lower(): value for name, value in attrs}
        for found in BLOCKED_ATTRIBUTE.findall(self.get_starttag_text() or ""):
            self.problems.append(f"line {line}: {found.lower()}= attribute on <{tag}>")
        if tag == "style":
            self.problems.append(f"line {line}: <style> element")
        if tag == "script":
            kind = (names.get("type") or "").strip().lower()
            if "src" not in names and kind not in DATA_TYPES:
                self._inline_script_at = line
        if tag in {"a", "form", "iframe"}:
            for name in ("href", "action", "src"):
                if (names.get(name) or "").strip().lower().startswith("javascript:"):
                    self.problems.append(f"line {line}: javascript: URL in {name}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._inline_script_at = None

    def handle_data(self, data: str) -> None:
        if self._inline_script_at is not None and data.strip():
            self.problems.append(f"line {self._inline_script_at}: inline <script> with code")
            self._inline_script_at = None


def inline_code_in(text: str) -> list[str]:
    finder = InlineCodeFinder()
    # Comments go, their line breaks stay, so that reported lines match the file.
    finder.feed(TEMPLATE_COMMENT.sub(lambda match: "\n" * match[0].count("\n"), text))
    finder.close()
    return finder.problems


def template_paths() -> list[Path]:
    return sorted(TEMPLATES.rglob("*.html"))


def test_there_are_templates_to_scan():
    assert len(template_paths()) >= 5


@pytest.mark.parametrize(
    "path", template_paths(), ids=lambda path: str(path.relative_to(TEMPLATES))
)
def test_template_has_no_inline_code_or_style(path):
    assert inline_code_in(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "<script>alert(1)</script>",
        "<script type='module'>import x from '/x.js'</script>",
        '<button onclick="go()">Go</button>',
        '<body onload="init()">',
        '<img src="/x.png" onerror="steal()">',
        '<p style="color: red">x</p>',
        "<style>p { color: red }</style>",
        '<a href="javascript:void(0)">x</a>',
        '<div {% if x %}style="display:none"{% endif %}>x</div>',
    ],
)
def test_the_scan_finds_what_the_policy_blocks(snippet):
    assert inline_code_in(snippet) != []


@pytest.mark.parametrize(
    "snippet",
    [
        '<script src="/static/js/page.js" defer></script>',
        '<script type="application/json" id="data">{"a": 1}</script>',
        '{{ data|json_script:"data" }}',
        '<p data-on="x" class="only">ordinary text with onclick= in it</p>',
        '<link rel="stylesheet" href="/static/css/claimgate.css">',
        "{% comment %}drf-spectacular's <style> block is left out{% endcomment %}",
    ],
)
def test_the_scan_lets_external_code_and_data_pass(snippet):
    assert inline_code_in(snippet) == []
