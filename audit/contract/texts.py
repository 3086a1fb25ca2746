"""Hostile text, refused with a reason before anything stores or hashes it.

JSON can carry what neither PostgreSQL nor a digest accepts: ``\\u0000`` (PostgreSQL's text
and jsonb refuse NUL), an unpaired surrogate such as ``\\ud800`` (not a character: UTF-8
cannot encode it, so no digest can be computed), and nesting deep enough to exhaust the
parser's or the serializer's recursion. Every JSON document the app accepts — an import
line, an annotation, a draft, a rationale — passes through :func:`text_problem` (or
:func:`loads_checked`, which parses too), so each of these answers a reason code, never a
crash.
"""

from __future__ import annotations

import json
import re
from typing import Any

from audit.contract import codes
from audit.contract.errors import ContractError

#: Deepest nesting of arrays and objects accepted anywhere. Records, observations and
#: annotations nest about six levels; 64 leaves room and stays far from any recursion limit.
MAX_DEPTH = 64

_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")

_DECODER = json.JSONDecoder()


def _text_sentence(path: str, text: str) -> str:
    found = _BAD_CHARACTER.search(text)
    assert found is not None
    position = found.start() + 1
    if found.group() == "\x00":
        what = "a NUL character (U+0000), which text cannot hold"
    else:
        what = (
            f"an unpaired surrogate (U+{ord(found.group()):04X}), which is not a character "
            "and has no UTF-8 form"
        )
    return f"{path} holds {what} at character {position}"


def bad_text(text: str, path: str = "$") -> ContractError | None:
    """The problem of one string, or None."""
    if _BAD_CHARACTER.search(text) is None:
        return None
    return ContractError(codes.INVALID_TEXT, _text_sentence(path, text))


def text_problem(
    value: Any, path: str = "$", *, max_depth: int = MAX_DEPTH
) -> ContractError | None:
    """The first NUL, unpaired surrogate (in a key or a string) or nesting deeper than
    ``max_depth`` in a parsed JSON value, as a :class:`ContractError` naming its path.

    Iterative: a value nested a million levels deep is measured without recursion.
    """
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if _BAD_CHARACTER.search(item) is not None:
                return ContractError(codes.INVALID_TEXT, _text_sentence(where, item))
        elif kind is dict:
            if depth >= max_depth:
                return _too_deep(where, max_depth)
            for key, child in item.items():
                if _BAD_CHARACTER.search(key) is not None:
                    return ContractError(
                        codes.INVALID_TEXT, _text_sentence(f"a key of {where}", key)
                    )
                stack.append((child, f"{where}.{key}", depth + 1))
        elif kind is list:
            if depth >= max_depth:
                return _too_deep(where, max_depth)
            stack.extend(
                (child, f"{where}[{index}]", depth + 1) for index, child in enumerate(item)
            )
    return None


def _too_deep(path: str, max_depth: int) -> ContractError:
    return ContractError(
        codes.TOO_DEEP,
        f"{path} nests arrays or objects more than {max_depth} levels deep",
    )


def loads_checked(
    text: str, *, max_depth: int = MAX_DEPTH, decoder: json.JSONDecoder = _DECODER
) -> Any:
    """Parse JSON text and refuse what :func:`text_problem` refuses.

    Raises :class:`ContractError` with ``malformed_json``, ``too_deep`` or ``invalid_text``.
    """
    try:
        value = decoder.decode(text)
    except RecursionError:
        raise _too_deep("$", max_depth) from None
    except ValueError as exc:
        raise ContractError(codes.MALFORMED_JSON, f"not JSON: {exc}") from None
    check_parsed(value, text, max_depth=max_depth)
    return value


def check_parsed(value: Any, text: str, *, max_depth: int = MAX_DEPTH) -> None:
    """:func:`text_problem` for a value parsed from ``text``, skipping the walk when the
    text cannot hold a problem: no ``\\u`` escape (a NUL or a surrogate needs one in valid
    JSON) and fewer brackets than ``max_depth``."""
    if "\\u" not in text and text.count("[") + text.count("{") <= max_depth:
        return
    problem = text_problem(value, max_depth=max_depth)
    if problem is not None:
        raise problem
