from __future__ import annotations

from pathlib import Path

from benchmarks.pages.algorithmic import summary
from benchmarks.pages.records import GENERATED, MACHINES, Findings, Record
from benchmarks.pages.tables import code, table

FAMILIES = {
    "reproduce_": "algorithmic.md",
    "ablation_": "ablations.md",
    "authors_panm_": "authors_code.md",
    "diagnose_pointer_": "diagnosis.md",
    "chomsky_": "chomsky.md",
    "seq2seq_": "seq2seq.md",
    "transduction_": "transduction.md",
    "m10ae_": "m10ae.md",
    "dyck_": "dyck.md",
}


def index_page(records: dict[str, Record], results: Path, findings: Findings) -> str:
    """``index.md``: the machines, how to read the tables, the summary, and what each page shows. Findings keys:
    ``intro``, ``reading``."""
    out = [GENERATED, "", "# Results", "", *findings.take("intro")]
    out += ["## The machines", ""]
    body = []
    for device in sorted({r.device for r in records.values()}):
        envs = [r.environment for r in records.values() if r.device == device and r.environment]
        dates = sorted(str(e.get("date", ""))[:10] for e in envs if e.get("date"))
        body.append(
            [
                MACHINES.get(device, device),
                code(f"benchmarks/results/{device}/"),
                ", ".join(sorted({str(e.get("device", "")) for e in envs})),
                ", ".join(sorted({str(e.get("cpu_count", "")) for e in envs})),
                ", ".join(sorted({str(e.get("jax", "")) for e in envs})),
                f"{dates[0]} to {dates[-1]}" if dates else "",
                str(len(list((results / device).glob("*.json")))),
            ]
        )
    out += [table(["machine", "folder", "device", "CPU cores", "jax", "dates", "files (JSON)"], body), ""]
    out += ["## How to read the tables", "", *findings.take("reading")]
    out += ["## The algorithmic tasks at a glance", "", summary(records, "algorithmic.md"), ""]
    out += ["## What each page shows", ""]
    body = []
    for device in sorted({r.device for r in records.values()}):
        stems = sorted(p.stem for p in (results / device).glob("*.json"))
        for prefix, page in FAMILIES.items():
            n = sum(s.startswith(prefix) for s in stems)
            if n:
                body.append([MACHINES.get(device, device), code(prefix + "*"), str(n), f"[{page}]({page})"])
        rest = [s for s in stems if not s.startswith(tuple(FAMILIES))]
        if rest:
            body.append(
                [
                    MACHINES.get(device, device),
                    ", ".join(code(s) for s in rest),
                    str(len(rest)),
                    "the speed suite's (not rendered here)",
                ]
            )
    out += [table(["machine", "files", "count", "page"], body), ""]
    return "\n".join(out)
