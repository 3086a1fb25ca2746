"""The API's JSON parser: DRF's, plus the hostile-text check of audit.contract.texts.

DRF's own parser lets a body nested 10⁵ levels deep exhaust Python's recursion (a 500),
and passes ``\\u0000`` and unpaired surrogates on to code that can neither store nor hash
them. This one answers 400 ``{"reason": "too_deep" | "invalid_text", "message": …}``
naming where, before any view runs. The services check the texts they take as well (pages
and commands reach them without this parser).
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json

from audit.contract import codes
from audit.contract.errors import ContractError
from audit.contract.texts import loads_checked

_STRICT = json.JSONDecoder(parse_constant=drf_json.strict_constant)


class TextRefused(ParseError):
    """A body that parses but holds text the app refuses: 400 with a reason code."""

    def __init__(self, error: ContractError) -> None:
        super().__init__({"reason": error.code, "message": f"request body: {error.message}"})


class CheckedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = codecs.getreader(encoding)(stream).read()
        except ValueError as exc:  # not in the declared encoding
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            return loads_checked(text, decoder=_STRICT)
        except ContractError as error:
            if error.code == codes.MALFORMED_JSON:
                raise ParseError(f"JSON parse error - {error.message}") from None
            raise TextRefused(error) from None
