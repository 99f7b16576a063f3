"""Read the pinned BFCL wheel in place: data files from the zip, simulated API classes by import.

The wheel is never installed (its dependency pins clash with ours); it is pure Python, so its
data is read straight from the zip and its simulated API modules import from the zip via
`zipimport`. Only the API classes' own modules are imported, never BFCL's checker or handlers.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import zipfile
from collections.abc import Iterator
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from toolcalib.jsonio import InputError
from toolcalib.registry import unknown

DATA_DIR = "bfcl_eval/data"
FUNC_SOURCE_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"

# class name -> (module in FUNC_SOURCE_PACKAGE, function-doc file in data/multi_turn_func_doc)
API_CLASSES: dict[str, tuple[str, str]] = {
    "GorillaFileSystem": ("gorilla_file_system", "gorilla_file_system.json"),
    "MathAPI": ("math_api", "math_api.json"),
    "MessageAPI": ("message_api", "message_api.json"),
    "TwitterAPI": ("posting_api", "posting_api.json"),
    "TicketAPI": ("ticket_api", "ticket_api.json"),
    "TradingBot": ("trading_bot", "trading_bot.json"),
    "TravelAPI": ("travel_booking", "travel_booking.json"),
    "VehicleControlAPI": ("vehicle_control", "vehicle_control.json"),
}
STATELESS_CLASSES = frozenset({"MathAPI"})

MISS_FUNC_MESSAGE = "I have updated some more functions you can choose from. What about now?"
"""BFCL's own user message for the turn where withheld functions arrive."""
MAX_STEPS_PER_TURN = 20
"""BFCL force-quits a turn after more than this many steps."""


def pin_timezone() -> None:
    """The simulated APIs format timestamps in local time: pin it so bytes never depend on TZ."""
    if os.environ.get("TZ") != "UTC":
        os.environ["TZ"] = "UTC"
        time.tzset()


class BfclRelease:
    """One BFCL wheel on disk."""

    def __init__(self, wheel: str | Path):
        self.wheel = Path(wheel)
        if not self.wheel.is_file():
            raise InputError(f"BFCL release not found: {self.wheel}")

    @cached_property
    def _zip(self) -> zipfile.ZipFile:
        return zipfile.ZipFile(self.wheel)

    def member(self, name: str) -> str:
        return f"{DATA_DIR}/{name}"

    def read_lines(self, name: str) -> Iterator[tuple[int, str]]:
        """(1-based line number, text) of a data file; blank lines are skipped."""
        text = self._zip.read(self.member(name)).decode("utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                yield number, line

    def func_docs(self, class_name: str) -> list[dict[str, Any]]:
        if class_name not in API_CLASSES:
            raise unknown("BFCL API class", class_name, API_CLASSES)
        name = f"multi_turn_func_doc/{API_CLASSES[class_name][1]}"
        return [json.loads(line) for _, line in self.read_lines(name)]

    @cached_property
    def _resolved(self) -> str:
        return str(self.wheel.resolve())

    def api_class(self, class_name: str) -> type:
        return _import_api_class(self._resolved, class_name)


@cache
def _import_api_class(wheel: str, class_name: str) -> type:
    if class_name not in API_CLASSES:
        raise unknown("BFCL API class", class_name, API_CLASSES)
    pin_timezone()
    if wheel not in sys.path:
        sys.path.append(wheel)
    module = importlib.import_module(f"{FUNC_SOURCE_PACKAGE}.{API_CLASSES[class_name][0]}")
    api_class: type = getattr(module, class_name)
    return api_class
