"""The peer comparison's bookkeeping (benchmarks/speed/peers.py) and the speed suite's use of its results; no torch needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import common
from benchmarks.speed import peers, suite

REPO = Path(__file__).resolve().parents[3]

CPUINFO = """\
processor	: 0
vendor_id	: AuthenticAMD
model name	: AMD EPYC 9R14 96-Core Processor
flags		: fpu vme sse2 avx avx2 fma avx512f avx512dq avx512_bf16 amx_tile amx_bf16
processor	: 1
model name	: AMD EPYC 9R14 96-Core Processor
flags		: fpu vme sse2 avx avx2 fma avx512f avx512dq avx512_bf16 amx_tile amx_bf16
"""


def test_cpu_flags_are_read_from_the_first_processor_of_proc_cpuinfo():
    cpu = peers.cpu_description(CPUINFO, cores=2)
    assert cpu == {
        "cpu_model": "AMD EPYC 9R14 96-Core Processor",
        "cores": 2,
        "avx2": True,
        "avx512f": True,
        "avx512_bf16": True,
        "amx": "amx_bf16 amx_tile",
    }
    old = peers.cpu_description("model name\t: Old Xeon\nflags\t\t: sse2 avx avx2\n", cores=4)
    assert (old["avx2"], old["avx512f"], old["avx512_bf16"], old["amx"]) == (True, False, False, False)
    assert peers.cpu_description("", cores=1)["cpu_model"] == "unknown"


def test_schedule_alternates_peer_and_ours_case_by_case():
    assert peers.schedule(["a", "b"], 2) == [
        ("a", "peer", 0),
        ("a", "ours", 0),
        ("a", "peer", 1),
        ("a", "ours", 1),
        ("b", "peer", 0),
        ("b", "ours", 0),
        ("b", "peer", 1),
        ("b", "ours", 1),
    ]
    assert peers.schedule(["a"], 1) == [("a", "peer", 0), ("a", "ours", 0)]


def test_the_peer_cases_are_the_speed_suites_cpu_cases_with_a_peer_under_unique_keys():
    cases = peers.peer_cases()
    assert list(cases) == [
        "panm256",
        "panm128",
        "panm128-eval81",
        "ntm-b128",
        "ntm-b1",
        "dnc64",
        "dnc256",
        "dnc1024",
    ]
    expected = [c for c in suite.CASES if c.peer and not c.accelerator_only]
    assert list(cases.values()) == expected
    assert peers.select(cases, "dnc,ntm-b1") == ["ntm-b1", "dnc64", "dnc256", "dnc1024"]
    assert peers.select(cases, "") == list(cases)
    with pytest.raises(SystemExit, match="--cases: unknown dnc9"):
        peers.select(cases, "dnc9")


def test_peer_specs_carry_the_speed_cases_configuration():
    cases = peers.peer_cases()
    dnc = peers.peer_spec(cases["dnc1024"])
    assert dnc["T_in"] + dnc["T_out"] == 50 and dnc["batch"] == 32
    assert (dnc["num_slots"], dnc["word_size"], dnc["num_reads"], dnc["hidden"]) == (1024, 32, 4, 256)
    panm = peers.peer_spec(cases["panm256"])
    assert (panm["hidden"], panm["address_bits"], panm["batch"], panm["T_in"], panm["T_out"]) == (256, 10, 128, 12, 10)
    assert (panm["input_size"], panm["output_size"], panm["eval_only"]) == (12, 10, False)
    assert peers.peer_spec(cases["panm128-eval81"])["eval_only"] is True
    ntm = peers.peer_spec(cases["ntm-b1"])
    assert (ntm["batch"], ntm["T_out"], ntm["num_slots"], ntm["word_size"], ntm["hidden"]) == (1, 20, 128, 20, 100)
    json.dumps(dnc)  # passed to the peer's process on its command line


def _fake_timings(key, side, r):
    # the peer takes 10x ours, with one slow round each
    base = {"ntm-b1": 0.01, "dnc64": 0.1}[key] * (10 if side == "peer" else 1)
    return {"median_s": base * (3 if r == 1 else 1), "params": 7 if side == "peer" else 8}


def test_compare_runs_the_schedule_and_takes_the_median_of_round_medians():
    cases = peers.peer_cases()
    calls, snapshots = [], []

    def measure(key, side, r):
        calls.append((key, side, r))
        return _fake_timings(key, side, r)

    rows = peers.compare(
        cases, ["ntm-b1", "dnc64"], 3, measure, lambda c: 5, on_row=lambda rows: snapshots.append(len(rows))
    )
    assert calls == peers.schedule(["ntm-b1", "dnc64"], 3)
    assert snapshots == [1, 2]  # written after each finished case
    ntm, dnc = rows
    assert ntm["case"] == "NTM ctrl 100, 128x20, Copy n=20, B=1" and ntm["peer"] == "pytorch-ntm"
    assert ntm["peer_round_medians"] == pytest.approx([0.1, 0.3, 0.1])
    assert ntm["peer_s"] == pytest.approx(0.1) and ntm["ours_s"] == pytest.approx(0.01)
    assert ntm["ratio"] == pytest.approx(10.0) and dnc["ratio"] == pytest.approx(10.0)
    assert (ntm["rounds"], ntm["repeats"], ntm["peer_params"], ntm["ours_params"]) == (3, 5, 7, 8)


def test_results_are_written_per_device_with_ratio_table_and_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    cases = peers.peer_cases()
    rows = peers.compare(cases, ["ntm-b1"], 1, _fake_timings, lambda c: 5)
    env = {"date": "2026-01-02T03:04:05+00:00", "commit": "abc1234", **peers.cpu_description(CPUINFO, 2)}
    json_path = peers.write(rows, env, "python -m benchmarks.speed.peers --cases ntm-b1")
    assert json_path == tmp_path / common.device_slug() / "peers.json"
    assert [p.name for p in json_path.parent.iterdir()] == ["peers.json"]
    payload = json.loads(json_path.read_text())
    assert payload["command"] == "python -m benchmarks.speed.peers --cases ntm-b1"
    row = payload["rows"][0]
    assert (row["key"], row["case"], row["peer"]) == ("ntm-b1", "NTM ctrl 100, 128x20, Copy n=20, B=1", "pytorch-ntm")
    assert row["ratio"] == pytest.approx(10.0) and (row["rounds"], row["repeats"]) == (1, 5)
    environment = payload["environment"]
    assert environment["cpu_model"].startswith("AMD EPYC 9R14")
    assert environment["avx512f"] is True and environment["amx"] == "amx_bf16 amx_tile"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cases", "dnc64", "--peer-python", sys.executable], "--dnc: required for the dnc cases"),
        (["--cases", "dnc64", "--dnc", "/no/such/dir", "--peer-python", sys.executable], "--dnc: no such directory"),
        (["--cases", "panm128", "--panm", str(REPO), "--peer-python", sys.executable], "--panm: "),
        (["--cases", "ntm-b1", "--ntm", str(REPO)], "--ntm: "),
    ],
)
def test_a_missing_peer_path_is_a_one_line_error_naming_the_argument(argv, message):
    with pytest.raises(SystemExit) as err:
        peers.main(argv)
    text = str(err.value)
    assert text.startswith(message) and "\n" not in text


def test_a_missing_peer_python_is_a_one_line_error_naming_the_argument(tmp_path):
    checkout = tmp_path / "ntm"
    (checkout / "ntm").mkdir(parents=True)
    (checkout / "ntm" / "aio.py").write_text("")
    for argv, message in (
        (["--cases", "ntm-b1", "--ntm", str(checkout)], "--peer-python: required"),
        (["--cases", "ntm-b1", "--ntm", str(checkout), "--peer-python", str(tmp_path / "py")], "--peer-python: not"),
    ):
        with pytest.raises(SystemExit) as err:
            peers.main(argv)
        assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_worker_protocol_takes_the_last_result_line_and_fails_loudly():
    out = peers.run_worker([sys.executable, "-c", "print('noise'); print('PEERS_RESULT {\"median_s\": 0.5}')"])
    assert out == {"median_s": 0.5}
    with pytest.raises(SystemExit, match="measurement failed"):
        peers.run_worker([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"])


def test_the_peer_side_imports_neither_jax_nor_the_library():
    code = (
        "import sys\n"
        "for name in ('jax', 'flax', 'optax', 'panm_jax'): sys.modules[name] = None\n"
        "import benchmarks.speed.peers\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def _peers_payload():
    return {
        "command": "python -m benchmarks.speed.peers --cases ntm",
        "environment": {"date": "2026-01-02T03:04:05+00:00", "commit": "abc1234", "torch": "2.14.1"},
        "rows": [{"case": "NTM ctrl 100, 128x20, Copy n=20, B=1", "peer_s": 0.12, "ours_s": 0.002, "ratio": 60.0}],
    }


def test_speed_reads_peer_columns_from_peers_json_of_its_device_folder(tmp_path):
    assert not hasattr(suite.Case("x", "x", "x"), "peer_s")  # no peer figures in the suite's code
    assert suite.load_peers(tmp_path) is None
    assert suite.peer_columns("NTM ctrl 100, 128x20, Copy n=20, B=1", None) == {"peer_s": "", "speedup_vs_peer": ""}
    note = suite.peers_note(None)
    assert "no peers.json" in note and "python -m benchmarks.speed.peers" in note

    (tmp_path / "peers.json").write_text(json.dumps(_peers_payload()))
    found = suite.load_peers(tmp_path)
    assert suite.peer_columns("NTM ctrl 100, 128x20, Copy n=20, B=1", found) == {
        "peer_s": 0.12,
        "speedup_vs_peer": 60.0,
    }
    assert suite.peer_columns("NTM ctrl 100, 128x20, Copy n=20, B=128", found) == {"peer_s": "", "speedup_vs_peer": ""}
    note = suite.peers_note(found)
    assert "2026-01-02T03:04:05+00:00" in note and "abc1234" in note and "--cases ntm" in note


@pytest.mark.parametrize("with_peers", [True, False])
def test_speed_table_takes_its_peer_columns_from_peers_json_or_leaves_them_empty(tmp_path, monkeypatch, with_peers):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    folder = tmp_path / common.device_slug()
    folder.mkdir()
    if with_peers:
        (folder / "peers.json").write_text(json.dumps(_peers_payload()))
    monkeypatch.setattr(common, "memory_bandwidth", lambda repeats=20: 50.0)

    def fake_run_case(case, quick, bw, fault_cost_s=float("nan")):
        return {
            "case": case.label,
            "median_s": 0.002,
            "floor_s": 0.001,
            "x_floor": 2.0,
            "peer": case.peer,
            "peer_s": "",
            "speedup_vs_peer": "",
        }

    monkeypatch.setattr(suite, "run_case", fake_run_case)
    assert suite.main(["--only", "ntm"]) == 0
    payload = json.loads((folder / "speed.json").read_text())
    by_case = {r["case"]: r for r in payload["rows"]}
    b1, b128 = by_case["NTM ctrl 100, 128x20, Copy n=20, B=1"], by_case["NTM ctrl 100, 128x20, Copy n=20, B=128"]
    assert b128["peer_s"] == b128["speedup_vs_peer"] == ""
    assert b1["peer"] == b128["peer"] == "pytorch-ntm"
    if with_peers:
        assert (b1["peer_s"], b1["speedup_vs_peer"]) == (0.12, 60.0)
        assert "come from peers.json" in payload["notes"] and "abc1234" in payload["notes"]
    else:
        assert b1["peer_s"] == b1["speedup_vs_peer"] == ""
        assert "no peers.json for this device" in payload["notes"]
