"""benchmarks.accuracy.queue: the plan's order and commands, ``--plan``, a call cut by its budget and resumed by
the next, failures, the export that carries the state to another machine, and one real runner end to end."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from benchmarks.accuracy import chomsky, queue, reproduce, transduction
from panm_jax.train.io import read_jsonl

# A stand-in runner: counts its calls in its folder; before call CALLS it sleeps (to be stopped by the budget),
# at call CALLS it writes its finished marker; MODE "fail" exits 3, "stubborn" ignores SIGINT.
FAKE_RUNNER = """
import signal, sys, time
from pathlib import Path

folder, calls_needed, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
folder.mkdir(parents=True, exist_ok=True)
counter = folder / "calls"
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
print(f"call {n}", flush=True)
if mode == "fail":
    print("something broke", flush=True)
    sys.exit(3)
if mode == "stubborn":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
if n < calls_needed:
    time.sleep(600)
(folder / "finished").write_text("yes")
print(f"wrote {folder / 'finished'}", flush=True)
"""


@dataclasses.dataclass(frozen=True)
class FakeCell(queue.Cell):
    """A cell run by ``FAKE_RUNNER``: done once its marker exists; its steps are its calls."""

    script: str = ""
    calls: int = 1
    mode: str = "ok"

    def command(self, workdir):
        return [sys.executable, self.script, str(workdir / self.name), str(self.calls), self.mode]

    def shown(self, workdir):
        return f"fake {self.name}"

    def budget(self):
        return f"{self.calls} call(s)"

    def state(self, workdir, results=None):
        folder = workdir / self.name
        calls = int((folder / "calls").read_text()) if (folder / "calls").exists() else 0
        if (folder / "finished").exists():
            return queue.State("done", "marker written", self.calls, self.calls)
        if calls:
            return queue.State("partial", f"{calls} call(s)", calls, self.calls)
        return queue.State("not started", "", 0, self.calls)

    def resume_folders(self, workdir):
        return []


def calls(workdir: Path, name: str) -> int:
    path = workdir / name / "calls"
    return int(path.read_text()) if path.exists() else 0


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """``make(name, calls=1, mode="ok")`` -> a ``FakeCell``; the SIGTERM-to-SIGKILL wait cut to 1 s."""
    script = tmp_path / "fake_runner.py"
    script.write_text(FAKE_RUNNER)
    monkeypatch.setattr(queue, "TERM_SECONDS", 1)

    def make(name, calls=1, mode="ok"):
        return FakeCell(name, f"stand-in {name}", script=str(script), calls=calls, mode=mode)

    return make


def test_the_plan_runs_the_most_decisive_cells_first():
    assert [c.name for c in queue.PLAN] == [
        "id_sort_protocol",
        "mix_headers_panm",
        "mix_headers_location_attention",
        "dynamic_recall_headers_panm",
        "dynamic_recall_headers_content_attention",
        "mix_protocol",
        "dynamic_recall_protocol",
        "reverse_ours",
        "mix_ours",
        "dynamic_recall_ours",
        "priority_sort_ours",
        "id_sort_ours",
        "chomsky_regular",
        "chomsky_stack",
        "chomsky_tape",
        "chomsky_panm_parity_check",
        "chomsky_panm_modular_arithmetic",
        "chomsky_panm_reverse_string",
        "chomsky_panm_stack_manipulation",
        "chomsky_panm_modular_arithmetic_brackets",
        "chomsky_panm_duplicate_string",
        "chomsky_panm_odds_first",
        "chomsky_panm_binary_addition",
        "transduction_decisive",
    ]
    by_name = {c.name: c for c in queue.PLAN}
    # Records named as the runners name them: the options of ours are Copy's recorded opt-5d5a9b, the headers'
    # lengths the opt- of the CPU-budget readings; no cap, so none of the capped records' names.
    assert by_name["id_sort_protocol"].record_stem() == "reproduce_id_sort_5seeds"
    assert by_name["mix_headers_panm"].record_stem() == "reproduce_mix_opt-6a04e5_5seeds"
    assert (
        by_name["dynamic_recall_headers_content_attention"].record_stem()
        == "reproduce_dynamic_recall_opt-02126c_5seeds"
    )
    assert by_name["mix_protocol"].record_stem() == "reproduce_mix_5seeds"
    assert by_name["reverse_ours"].record_stem() == "reproduce_reverse_opt-5d5a9b_5seeds"
    assert by_name["chomsky_stack"].record_stem() == "chomsky_1000000steps_stack"
    protocol = [c for c in queue.PLAN if isinstance(c, queue.ReproduceCell)]
    assert all(
        c.seeds == (0, 1, 2, 3, 4) and c.steps is None and "--minutes" not in c.args(Path("w")) for c in protocol
    )
    assert [c.one_by_one for c in protocol if c.task == "id_sort"] == [True, True]
    chomsky_cells = [c for c in queue.PLAN if isinstance(c, queue.ChomskyCell)]
    assert all(c.steps == 1_000_000 for c in chomsky_cells)
    assert {(t, m) for c in chomsky_cells for t in c.tasks for m in c.models} == {
        *((t, m) for t in ("parity_check", "modular_arithmetic") for m in ("rnn", "single_lstm", "panm")),
        *(
            (t, m)
            for t in ("reverse_string", "stack_manipulation", "modular_arithmetic_brackets")
            for m in ("stack_rnn", "panm")
        ),
        *((t, m) for t in ("duplicate_string", "odds_first", "binary_addition") for m in ("tape_rnn", "panm")),
    }
    (trans,) = [c for c in queue.PLAN if isinstance(c, queue.TransductionCell)]
    assert {(t, m) for t, m, _ in trans._plan()} == {
        ("transduction_reversal", "stack_lstm"),
        ("transduction_copy", "queue_lstm"),
        ("transduction_copy", "deque_lstm"),
        ("transduction_reversal", "deque_lstm"),
    }
    assert len(trans._plan()) == 12  # 3 seeds of each


def test_every_command_uses_its_runners_own_options(capsys):
    helps = {}
    for module in (reproduce, chomsky, transduction):
        with pytest.raises(SystemExit):
            module.main(["--help"])
        helps[module.__name__] = capsys.readouterr().out
    for cell in queue.PLAN:
        options = [a for a in cell.args(Path("runs/queue")) if a.startswith("--")]
        assert options and all(f"{o} " in helps[cell.module] or f"{o}\n" in helps[cell.module] for o in options)
        assert cell.command(Path("runs/queue"))[:3] == [sys.executable, "-m", cell.module]


def test_plan_prints_each_cell_with_its_state_and_runs_nothing(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    monkeypatch.setattr(queue, "RESULTS_DIR", results)
    workdir = tmp_path / "queue"
    (results / "nvidia-h200").mkdir(parents=True)

    def record(name, steps):
        rows = [{"model": "panm", "row": "ours", "seeds": 5, "steps": ",".join([str(steps)] * 5)}]
        (results / "nvidia-h200" / f"{name}.json").write_text(json.dumps({"rows": rows}))

    record("reproduce_id_sort_5seeds", 100_000)  # the whole cell
    record("reproduce_mix_5seeds", 45_360)  # a capped record: not the cell
    cell = {c.name: c for c in queue.PLAN}["mix_headers_panm"]
    run = cell.runs(workdir)[0].folder  # one seed's folder with a complete checkpoint at step 3,000
    (run / "checkpoints" / "3000").mkdir(parents=True)
    (run / "checkpoints" / "3000" / "checksums.sha256").write_text("")
    (run / "checkpoints" / "4000").mkdir()  # being written: no checksums yet

    assert queue.main(["--plan", "--workdir", str(workdir)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if re.match(r" ?\d+\. ", line)]
    assert len(lines) == len(queue.PLAN)
    assert lines[0] == " 1. id_sort_protocol: done: record nvidia-h200/reproduce_id_sort_5seeds.json"
    assert lines[1] == " 2. mix_headers_panm: partial: 0 of 5 runs finished, 3,000 of 250,000 steps (1 %)"
    assert lines[5] == " 6. mix_protocol: not started"
    assert all(line.endswith("not started") for line in lines[2:])
    assert "python -m benchmarks.accuracy.reproduce --task id_sort --models panm --seeds 0,1,2,3,4 --one-by-one" in out
    assert not (workdir / queue.LOG).exists()


def test_a_call_cut_by_its_budget_is_resumed_by_the_next_and_nothing_finished_runs_twice(fake, tmp_path, monkeypatch):
    # The second call runs on "another machine": the first's --export, unpacked into a fresh checkout.
    checkouts = [tmp_path / "here", tmp_path / "there"]
    monkeypatch.setattr(queue, "PLAN", [fake("first", calls=2), fake("second")])

    def call(checkout, *more):
        monkeypatch.setattr(queue, "REPO", checkout)
        monkeypatch.setattr(queue, "RESULTS_DIR", checkout / "benchmarks" / "results")
        workdir = checkout / "runs" / "queue"
        argv = ["--workdir", str(workdir), "--grace-seconds", "1", "--min-seconds", "0", *more]
        assert queue.main(argv) == 0
        return workdir

    began = time.monotonic()
    workdir = call(checkouts[0], "--budget-seconds", "4", "--export", str(tmp_path / "out"))
    assert time.monotonic() - began < 20
    (cut,) = read_jsonl(workdir / queue.LOG)
    assert cut["cell"] == "first" and cut["stopped"] == "budget: SIGINT" and cut["exit_code"] != 0
    assert not cut["finished"] and cut["after"]["status"] == "partial" and cut["output_tail"][0] == "call 1"
    assert cut["output_tail"][-1] == "KeyboardInterrupt"  # the runner's own SIGINT handling
    assert cut["device"] and "code" in cut and cut["start"] <= cut["end"]
    assert (calls(workdir, "first"), calls(workdir, "second")) == (1, 0)  # the budget was spent on the first
    assert "1. first: partial: 1 call(s)" in (tmp_path / "out" / queue.PLAN_FILE).read_text()

    monkeypatch.setattr(queue, "REPO", checkouts[1])
    assert queue.main(["--unpack", str(tmp_path / "out")]) == 0
    workdir = call(checkouts[1], "--budget-seconds", "60")
    lines = read_jsonl(workdir / queue.LOG)
    assert [(x["cell"], x["exit_code"], x["stopped"], x["finished"]) for x in lines] == [
        ("first", cut["exit_code"], "budget: SIGINT", False),
        ("first", 0, None, True),
        ("second", 0, None, True),
    ]
    assert lines[1]["before"]["status"] == "partial" and lines[1]["wrote"] == [
        f"wrote {workdir / 'first' / 'finished'}"
    ]

    workdir = call(checkouts[1], "--budget-seconds", "60")  # nothing left: nothing runs
    assert len(read_jsonl(workdir / queue.LOG)) == 3
    assert (calls(workdir, "first"), calls(workdir, "second")) == (2, 1)
    logged = (workdir / "logs" / "first.log").read_text().splitlines()
    assert [x for x in logged if x.startswith("call ")] == ["call 1", "call 2"]  # both attempts, one log


def test_a_queue_started_with_sigint_ignored_still_interrupts_its_runner(fake, tmp_path):
    # A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored in a child.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        (line,) = queue.run_queue([fake("first", calls=2)], tmp_path / "queue", 4, grace_seconds=1, min_seconds=0)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert line["stopped"] == "budget: SIGINT" and line["output_tail"][-1] == "KeyboardInterrupt"


def test_a_runner_that_ignores_sigint_is_terminated(fake, tmp_path):
    workdir = tmp_path / "queue"
    (line,) = queue.run_queue([fake("stubborn", calls=2, mode="stubborn")], workdir, 4, grace_seconds=1, min_seconds=0)
    assert line["stopped"] == "budget: SIGTERM" and line["exit_code"] == -15


def test_a_failed_runner_is_recorded_and_the_queue_moves_on(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(queue, "PLAN", [fake("broken", mode="fail"), fake("after")])
    workdir = tmp_path / "queue"
    argv = ["--workdir", str(workdir), "--budget-seconds", "60", "--grace-seconds", "1", "--min-seconds", "0"]
    assert queue.main(argv) == 0
    broken, after = read_jsonl(workdir / queue.LOG)
    assert broken["cell"] == "broken" and broken["exit_code"] == 3 and broken["stopped"] is None
    assert broken["output_tail"] == ["call 1", "something broke"] and not broken["finished"]
    assert after["cell"] == "after" and after["finished"]
    assert queue.main(argv) == 0  # a second failure...
    assert queue.main(argv) == 0  # ...and the cell is passed over
    assert [x["cell"] for x in read_jsonl(workdir / queue.LOG)] == ["broken", "after", "broken"]
    assert queue.main([*argv, "--retry-failed"]) == 0
    assert calls(workdir, "broken") == 3


@dataclasses.dataclass(frozen=True)
class FoldersCell(FakeCell):
    """A ``FakeCell`` whose unfinished run folders are ``folders``."""

    folders: tuple[str, ...] = ()

    def resume_folders(self, workdir):
        return [workdir / f for f in self.folders]


def checkpoint(run: Path, kind: str, step: int, size: int) -> None:
    folder = run / kind / str(step)
    folder.mkdir(parents=True)
    (folder / "checksums.sha256").write_text("sums")
    (folder / "state").write_bytes(os.urandom(size))


def test_export_carries_records_log_and_the_checkpoints_that_fit_and_unpack_restores_them(tmp_path, monkeypatch):
    root = tmp_path / "checkout"
    results, workdir = root / "benchmarks" / "results", root / "runs" / "queue"
    (results / "cpu").mkdir(parents=True)
    old = results / "cpu" / "old.json"
    old.write_text("{}")
    os.utime(old, (time.time() - 3600,) * 2)
    since = time.time()
    (results / "cpu" / "new.json").write_text('{"rows": []}')
    (workdir / "logs").mkdir(parents=True)
    (workdir / queue.LOG).write_text('{"cell": "a"}\n')
    (workdir / "logs" / "a.log").write_text("call 1\n")
    small, big, beside = workdir / "r" / "small", workdir / "r" / "big", workdir / "r" / "beside"
    for run in (small, big, beside):
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text('{"step": 50}\n')
        (run / ".lock").write_text("123")
    checkpoint(small, "checkpoints", 1000, 1000)
    checkpoint(small, "checkpoints", 2000, 1000)
    checkpoint(small, "best", 1000, 1000)
    checkpoint(big, "checkpoints", 1000, 200_000)
    checkpoint(beside, "checkpoints", 1000, 1000)
    # A cell's checkpoints go whole or not at all (seeds trained together); a later cell's may still fit.
    cells = [FoldersCell("a", "", folders=("r/big", "r/beside")), FoldersCell("b", "", folders=("r/small",))]
    out = tmp_path / "out"

    manifest = queue.export_state(cells, workdir, out, since, 100_000, root=root, results=results)
    assert manifest["workdir"] == "runs/queue"
    assert manifest["records"] == ["benchmarks/results/cpu/new.json"]
    assert manifest["checkpoints"] == ["runs/queue/r/small"] and manifest["checkpoints_left_out"] == [
        "runs/queue/r/big",
        "runs/queue/r/beside",
    ]
    assert sorted(p.name for p in out.iterdir()) == [queue.PLAN_FILE, f"{queue.ARCHIVE}.00"]

    target = tmp_path / "elsewhere"
    (target / "runs" / "queue" / "stale").mkdir(parents=True)  # the work folder is replaced, not merged
    assert queue.unpack_state(out, root=target)["checkpoints"] == ["runs/queue/r/small"]
    got = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert got == [
        "benchmarks/results/cpu/new.json",
        "runs/queue/exported.json",
        "runs/queue/logs/a.log",
        "runs/queue/queue.jsonl",
        "runs/queue/r/beside/metrics.jsonl",
        "runs/queue/r/big/metrics.jsonl",
        "runs/queue/r/small/best/1000/checksums.sha256",
        "runs/queue/r/small/best/1000/state",
        "runs/queue/r/small/checkpoints/2000/checksums.sha256",
        "runs/queue/r/small/checkpoints/2000/state",
        "runs/queue/r/small/metrics.jsonl",
    ]
    assert (target / "runs/queue/r/small/checkpoints/2000/state").read_bytes() == (
        small / "checkpoints" / "2000" / "state"
    ).read_bytes()


def test_export_splits_its_archive_into_parts_that_unpack_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(queue, "PART_BYTES", 4096)
    root, results = tmp_path / "checkout", tmp_path / "checkout" / "benchmarks" / "results"
    workdir = root / "runs" / "queue"
    run = workdir / "r"
    run.mkdir(parents=True)
    checkpoint(run, "checkpoints", 10, 10_000)  # random bytes: the archive stays about this large
    out = tmp_path / "out"
    queue.export_state(
        [FoldersCell("a", "", folders=("r",))], workdir, out, time.time(), 10**6, root=root, results=results
    )
    assert len(list(out.glob(f"{queue.ARCHIVE}.*"))) == 3
    target = tmp_path / "elsewhere"
    queue.unpack_state(out, root=target)
    assert (target / "runs/queue/r/checkpoints/10/state").read_bytes() == (run / "checkpoints/10/state").read_bytes()


def test_a_real_runner_cell_runs_once_and_is_then_done(tmp_path, monkeypatch):
    """The Chomsky runner at 2 steps and lengths up to 5: the queue's folders and finished test are the runner's."""
    cell = queue.ChomskyCell(
        "tiny",
        "the Chomsky runner end to end",
        tasks=("parity_check",),
        models=("rnn",),
        steps=2,
        max_train_length=3,
        max_test_length=5,
        examples_per_length=2,
    )
    monkeypatch.setattr(queue, "PLAN", [cell])
    workdir = tmp_path / "queue"
    argv = ["--workdir", str(workdir), "--budget-seconds", "500", "--grace-seconds", "5", "--min-seconds", "0"]
    assert cell.state(workdir).status == "not started"
    assert queue.main(argv) == 0
    (line,) = read_jsonl(workdir / queue.LOG)
    assert line["exit_code"] == 0 and line["finished"] and line["stopped"] is None, line["output_tail"]
    assert line["after"] == {"status": "done", "detail": "all 1 runs finished", "done_steps": 2, "total_steps": 2}
    assert (workdir / "chomsky" / "parity_check" / "rnn-s0-2steps" / "range.json").exists()
    assert queue.main(argv) == 0
    assert len(read_jsonl(workdir / queue.LOG)) == 1
