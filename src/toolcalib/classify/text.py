"""Text helpers the classifier modules share: what of an agent's text is read (reasoning
blocks removed, a JSON document read as its strings) and whether it holds a word."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)
THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
WORD = re.compile(r"\w")
JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*(?:"|\Z)')
"""A JSON string literal, or the one a cut-off document ends inside."""
JSON_KEY = re.compile(r"\s*:")
MIN_CHARS = 3
"""Shorter strings of a JSON document are not read (one- or two-character codes, flags)."""


def readable(text: str) -> str:
    """A text that is a JSON document as its string values, one per line (agents that answer
    in JSON); a document cut off before its end as the string values it holds; any other text
    as is."""
    if not text.strip().startswith(("{", "[")):
        return text
    try:
        data = json.loads(text)
    except ValueError:
        data = [_literal(found[0]) for found in JSON_STRING.finditer(text)
                if not JSON_KEY.match(text, found.end())]
    return "\n".join(_strings(data)) or text


def _literal(quoted: str) -> str:
    """A JSON string literal's value, closed if cut off ("" where an escape is not JSON's)."""
    closed = len(quoted) > 1 and quoted.endswith('"') and not quoted.endswith('\\"')
    try:
        return str(json.loads(quoted if closed else quoted + '"'))
    except ValueError:
        return ""


def _strings(value: Any) -> Iterator[str]:
    """The strings of a JSON value (stripped, at least `MIN_CHARS` long), in order."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str) and len(value.strip()) >= MIN_CHARS:
        yield value.strip()


def strip_reasoning(text: str) -> str:
    """`text` without reasoning blocks; a `</think>` with no opening tag ends the reasoning."""
    if (close := THINK_CLOSE.search(text)) and "<think>" not in text[: close.start()].lower():
        text = text[close.end() :]
    return THINK.sub("\n", text)
