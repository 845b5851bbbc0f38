from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.pages.ablations import ablations_page
from benchmarks.pages.algorithmic import algorithmic_page, summary
from benchmarks.pages.authors_code import authors_page
from benchmarks.pages.chomsky import chomsky_page
from benchmarks.pages.diagnosis import diagnosis_page
from benchmarks.pages.dyck import dyck_page
from benchmarks.pages.index import index_page
from benchmarks.pages.m10ae import m10ae_page
from benchmarks.pages.records import END, FINDINGS, README, RESULTS, START, Findings, Record, RecordError, load
from benchmarks.pages.seq2seq import seq2seq_page
from benchmarks.pages.transduction import transduction_page

BROKEN = (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError)


def render_page(name: str, make: Callable[[dict[str, Record]], str], records: dict[str, Record]) -> str:
    """``make(records)``; where a record's content breaks it, ``RecordError`` naming the first record that breaks
    the page on its own, and what it lacks (a missing field) or holds wrong."""
    try:
        return make(records)
    except BROKEN as err:
        for record in records.values():
            try:
                make({record.key: record})
            except BROKEN as alone:
                raise RecordError(f"{record.path}: {name} cannot be rendered from it: {what(alone)}") from None
        raise RecordError(f"{name} cannot be rendered from the records together: {what(err)}") from None


def what(err: Exception) -> str:
    """``KeyError('steps')`` -> ``"a row or setting lacks the field 'steps'"``; others by type and message."""
    if isinstance(err, KeyError):
        return f"a row or setting lacks the field {err}"
    return f"{type(err).__name__}: {err}"


def render(results: Path = RESULTS, findings: Path = FINDINGS) -> tuple[dict[str, bytes], str]:
    """Every page (``{relative path: bytes}``, images included) and the README's summary, from ``results``."""
    records = load(results)
    images: dict[str, bytes] = {}
    notes = {
        name: Findings(findings / f"{name}.md")
        for name in (
            "index",
            "algorithmic",
            "ablations",
            "authors_code",
            "diagnosis",
            "chomsky",
            "seq2seq",
            "transduction",
            "m10ae",
            "dyck",
        )
    }
    makers: dict[str, Callable[[dict[str, Record]], str]] = {
        "algorithmic.md": lambda found: algorithmic_page(found, results, notes["algorithmic"], images),
        "ablations.md": lambda found: ablations_page(found, notes["ablations"], results, images),
        "authors_code.md": lambda found: authors_page(found, notes["authors_code"]),
        "diagnosis.md": lambda found: diagnosis_page(found, notes["diagnosis"]),
        "chomsky.md": lambda found: chomsky_page(found, results, notes["chomsky"], images),
        "seq2seq.md": lambda found: seq2seq_page(found, notes["seq2seq"]),
        "transduction.md": lambda found: transduction_page(found, notes["transduction"]),
        "m10ae.md": lambda found: m10ae_page(found, notes["m10ae"]),
        "dyck.md": lambda found: dyck_page(found, results, notes["dyck"], images),
    }
    pages = {name: render_page(name, make, records) for name, make in makers.items()}
    pages = {"index.md": index_page(records, results, notes["index"], pages), **pages}
    for n in notes.values():
        n.finish()
    files = {name: (re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n").encode() for name, text in pages.items()}
    return {**files, **images}, summary(records, "docs/results/algorithmic.md")


def fill_readme(text: str, block: str) -> str:
    """``text`` with ``block`` between the results-summary markers; SystemExit naming what is missing."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md: expected the markers {START} and {END} (in that order), found none")
    return text[: start + len(START)] + "\n" + block + text[end:]


def write(files: dict[str, bytes], out: Path) -> None:
    """Write the pages into ``out``, removing files there that are no longer rendered."""
    out.mkdir(parents=True, exist_ok=True)
    for old in sorted(p for p in out.rglob("*") if p.is_file()):
        if old.relative_to(out).as_posix() not in files:
            old.unlink()
    for name, data in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def readme_differences(block: str, readme: Path = README) -> list[str]:
    """What differs between the README's committed results summary and ``block``, its rendering (``[]``: none)."""
    text = readme.read_text()
    try:
        return [] if fill_readme(text, block) == text else [f"{readme}: the results summary differs from its rendering"]
    except SystemExit as missing:
        return [str(missing)]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--check", action="store_true", help="exit 1 if README.md's results summary differs from its rendering"
    )
    p.add_argument("--out", default=None, help="also write every page and image into this folder, to read them")
    args = p.parse_args(argv)
    if args.check and args.out:
        raise SystemExit("--check: compares README.md's summary only; expected no --out, got --out " + args.out)
    try:
        files, block = render()
    except RecordError as err:
        print(f"benchmarks.pages: {err}", file=sys.stderr)
        return 2
    if args.check:
        found = readme_differences(block)
        for line in found:
            print(line)
        if found:
            print("README.md: run python -m benchmarks.pages to write its summary", file=sys.stderr)
            return 1
        print(f"README.md's results summary matches the recorded results ({len(files)} page files rendered)")
        return 0
    README.write_text(fill_readme(README.read_text(), block))
    if args.out:
        write(files, Path(args.out))
        print(f"wrote {len(files)} files into {args.out} and README.md's results summary")
    else:
        print(f"rendered {len(files)} page files; wrote README.md's results summary (make docs builds the pages)")
    return 0
