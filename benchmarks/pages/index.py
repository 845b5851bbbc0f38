from __future__ import annotations

import re
from pathlib import Path

from benchmarks.pages.algorithmic import summary
from benchmarks.pages.records import GENERATED, MACHINES, Findings, Record
from benchmarks.pages.tables import code, table

# Every page: its file, its title, what it compares, and the runner whose records it renders (further runners whose
# records a page renders as well: EXTRA_RUNNERS).
PAGES = (
    ("algorithmic.md", "The algorithmic tasks", "Le et al. 2024, Tables 3 and 13-18", "benchmarks.accuracy.reproduce"),
    ("ablations.md", "Ablations of PANM", "Le et al. 2024, Tables 13-14, Fig. 8-9", "benchmarks.accuracy.ablation"),
    ("authors_code.md", "The authors' code", "Le et al. 2024, Tables 13-14", "benchmarks.accuracy.authors_panm"),
    (
        "diagnosis.md",
        "Where the pointers go",
        "nothing published: explains the tables",
        "benchmarks.accuracy.diagnose_pointer",
    ),
    ("chomsky.md", "Chomsky hierarchy", "Delétang et al. 2023, Table 2", "benchmarks.accuracy.chomsky"),
    ("seq2seq.md", "SCAN and Mathematics", "Le et al. 2024, Tables 4 and 19", "benchmarks.accuracy.seq2seq"),
    ("transduction.md", "Transduction", "Grefenstette et al. 2015, Figure 2a", "benchmarks.accuracy.transduction"),
    ("m10ae.md", "M10AE", "nothing published for these models", "benchmarks.accuracy.m10ae"),
    ("dyck.md", "Dyck languages", "Le et al. 2024, Table 2 and Fig. 3a", "benchmarks.accuracy.dyck"),
)

EXTRA_RUNNERS = {"benchmarks.accuracy.chomsky_peer": "chomsky.md"}


def page_runners(name: str, runner: str) -> set[str]:
    """The runners whose records page ``name`` renders: its own and those of ``EXTRA_RUNNERS``."""
    return {runner, *(r for r, page in EXTRA_RUNNERS.items() if page == name)}


# The papers' experiments that cannot run offline, and why: each needs a download the library does not make.
NOT_RUN = (
    ("Le et al. 2024, Table 5 and Fig. 5 (right)", "bAbI question answering", "the bAbI dataset"),
    ("Le et al. 2024, Table 6", "SQuAD 1.1 with BERT", "the SQuAD dataset and BERT's pretrained weights"),
    ("Le et al. 2024, Fig. 3b and Fig. 7 (right)", "machine translation on Multi30K", "the Multi30K dataset"),
    (
        "Le et al. 2024, Tables 7, 8 and 11",
        "Llama2-7B, zero-shot, 5-shot and finetuned with PANM",
        "Llama2-7B's weights and BIG-bench",
    ),
    ("Le et al. 2024, Table 12", "ChatGPT on the algorithmic tasks", "a commercial model behind an API"),
)


def verdict_tally(page: str) -> str:
    """The verdict counts of a rendered page's opening summary (its ``Verdicts:`` line), ``""`` where it has none."""
    found = re.search(r"^Verdicts: (.*?)\. ", page, re.M)
    return found.group(1) if found else ""


def index_page(records: dict[str, Record], results: Path, findings: Findings, pages: dict[str, str]) -> str:
    """``index.md``: every page with what it compares and its verdicts (``pages``: the other pages, rendered), the
    experiments not run here, the machines, how to read the tables, the algorithmic summary, and which records
    each page renders (by the runner that recorded them). Findings keys: ``intro``, ``reading``."""
    out = [GENERATED, "", "# Results", "", *findings.take("intro")]
    out += ["## The pages", ""]
    body = []
    for name, title, compares, runner in PAGES:
        n = sum(r.runner in page_runners(name, runner) for r in records.values())
        body.append([f"[{title}]({name})", compares, str(n), verdict_tally(pages.get(name, "")) or "no verdicts"])
    out += [table(["page", "compares with", "records", "verdicts of its opening summary"], body), ""]
    out += [
        "A verdict holds when ours is within two standard deviations over the seeds of the published number (or "
        "within 1 point without spread); 'not fit' marks runs that did not fit their training lengths at their "
        "budget, whose scores measure the budget rather than the model. Each page's opening table gives them "
        "cell by cell.",
        "",
    ]
    out += ["## Not run here", ""]
    out += [table(["experiment", "what", "needs"], ([a, b, c] for a, b, c in NOT_RUN)), ""]
    out += [
        "The pages above hold the experiments of these papers whose data can be generated procedurally.",
        "",
    ]
    out += ["## The machines", ""]
    body = []
    for device in sorted({r.device for r in records.values()}):
        envs = [r.environment for r in records.values() if r.device == device and r.environment]
        dates = sorted(str(e.get("date", ""))[:10] for e in envs if e.get("date"))
        body.append(
            [
                MACHINES.get(device, device),
                code(f"benchmarks/results/{device}/"),
                ", ".join(sorted({str(e["device"]) for e in envs if e.get("device") not in ("", None)})),
                ", ".join(sorted({str(e["cpu_count"]) for e in envs if e.get("cpu_count") not in ("", None)})),
                ", ".join(sorted({str(e["jax"]) for e in envs if e.get("jax") not in ("", None)})),
                f"{dates[0]} to {dates[-1]}" if dates else "",
                str(len(list((results / device).glob("*.json")))),
            ]
        )
    out += [table(["machine", "folder", "device", "CPU cores", "jax", "dates", "records"], body), ""]
    out += ["## How to read the tables", "", *findings.take("reading")]
    out += ["## The algorithmic tasks in the README", "", summary(records, "algorithmic.md"), ""]
    out += ["## The records of each page", ""]
    body = []
    runners = {r for name, _, _, runner in PAGES for r in page_runners(name, runner)}
    for device in sorted({r.device for r in records.values()}):
        mine = [r for r in records.values() if r.device == device]
        for name, _, _, runner in PAGES:
            for each in sorted(page_runners(name, runner)):
                n = sum(r.runner == each for r in mine)
                if n:
                    body.append([MACHINES.get(device, device), code(each), str(n), f"[{name}]({name})"])
        rest = sorted(r.stem for r in mine if r.runner not in runners)
        if rest:
            body.append(
                [MACHINES.get(device, device), ", ".join(code(s) for s in rest), str(len(rest)), "not rendered here"]
            )
    out += [table(["machine", "recorded by", "records", "page"], body), ""]
    out += [
        "The speed suite's records (timings) are read by [Performance](../performance.md), not rendered here.",
        "",
    ]
    return "\n".join(out)
