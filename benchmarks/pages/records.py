from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
FINDINGS = ROOT / "benchmarks" / "findings"
README = ROOT / "README.md"
START, END = "<!-- results-summary:start -->", "<!-- results-summary:end -->"
GENERATED = (
    "<!-- Rendered from benchmarks/results/ by `python -m benchmarks.pages`: edit the prose in "
    "benchmarks/findings/, not this file (the check fails on a hand edit). -->"
)

MODES = ("L", "L+1", "2L+1", "4L+1", "8L+1")
LENGTHS = (10, 11, 21, 41, 81)  # the algorithmic tasks' test lengths at L = 10
# The modes of the other test-length convention (task option test_lengths="k(L+1)"), matched to MODES by position.
K_MODES = ("L", "L+1", "2(L+1)", "4(L+1)", "8(L+1)")
K_LENGTHS = (10, 11, 22, 44, 88)  # their lengths at L = 10

# Le et al. 2024's algorithmic tasks, in the order of their Tables 13-18.
TASKS = {
    "copy": ("Copy", 13),
    "reverse": ("Reverse", 14),
    "mix": ("Mix", 15),
    "dynamic_recall": ("Dynamic Recall", 16),
    "priority_sort": ("Priority Sort", 17),
    "id_sort": ("ID Sort", 18),
}

# How the tables name the machines of the results folders.
MACHINES = {"cpu-2cores": "CPU", "nvidia-h100-80gb-hbm3": "H100", "nvidia-h200": "H200"}


@dataclasses.dataclass(frozen=True)
class Record:
    """One results file: ``benchmarks/results/<device>/<stem>.json``."""

    device: str
    stem: str
    data: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.device}/{self.stem}"

    @property
    def path(self) -> str:
        return f"benchmarks/results/{self.device}/{self.stem}.json"

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.data.get("rows", [])

    @property
    def settings(self) -> dict[str, Any]:
        return self.data.get("settings", {})

    @property
    def environment(self) -> dict[str, Any]:
        return self.data.get("environment", {})

    @property
    def machine(self) -> str:
        return MACHINES.get(self.device, self.device)

    @property
    def date(self) -> str:
        return str(self.environment.get("date", ""))[:10]

    @property
    def commit(self) -> str:
        return str(self.environment.get("commit", ""))

    @property
    def command(self) -> str:
        return str(self.data.get("command", ""))

    def option(self, name: str) -> str | None:
        """The value given to ``--name`` in the file's command, ``None`` where it is not given."""
        found = re.search(rf"--{re.escape(name)}[= ](\S+)", self.command)
        return found.group(1) if found else None

    @property
    def runner(self) -> str:
        """The module that recorded the file, from its command (``benchmarks.accuracy.reproduce``); ``""`` if none."""
        found = re.search(r"-m (\S+)", self.command)
        return found.group(1) if found else ""


class RecordError(SystemExit):
    """A results file the pages cannot read: the message names the file and what is wrong with it."""


def _refuse_constant(name: str) -> float:
    raise ValueError(f"holds {name}, which is not a number (a missing value is recorded as null or left out)")


def load(results: Path = RESULTS) -> dict[str, Record]:
    """Every ``<device>/<stem>.json`` under ``results`` with a table (``rows``), by ``device/stem``; a file that
    is not JSON, holds NaN or infinity, or whose ``rows`` are not a list of objects raises ``RecordError``."""
    records = {}
    for path in sorted(results.glob("*/*.json")):
        where = path.relative_to(results.parent.parent) if results.parent.parent in path.parents else path
        try:
            data = json.loads(path.read_text(), parse_constant=_refuse_constant)
        except ValueError as err:
            raise RecordError(f"{where}: {err}") from None
        if isinstance(data, dict) and "rows" in data:
            rows = data["rows"]
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise RecordError(f"{where}: field 'rows': expected a list of objects, got {type(rows).__name__}")
            record = Record(path.parent.name, path.stem, data)
            records[record.key] = record
    return records


class Findings:
    """The prose of one page, ``benchmarks/findings/<page>.md``: its ``## KEY`` sections (text before the first
    heading is a comment for whoever edits the file). ``take`` hands a section to the table it explains;
    ``finish`` refuses sections that no table took."""

    def __init__(self, path: Path):
        self.path = path
        self.sections: dict[str, str] = {}
        text = path.read_text() if path.exists() else ""
        for part in re.split(r"^## ", text, flags=re.M)[1:]:
            key, _, body = part.partition("\n")
            self.sections[key.strip()] = body.strip()
        self.unused = set(self.sections)

    def take(self, key: str) -> list[str]:
        self.unused.discard(key)
        body = self.sections.get(key, "")
        return [body, ""] if body else []

    def finish(self) -> None:
        if self.unused:
            raise SystemExit(f"{self.path}: sections that no table takes: {sorted(self.unused)}")
