"""The Chomsky peer comparison's bookkeeping (benchmarks/speed/chomsky_peer.py), from fake worker output: no peer."""

from __future__ import annotations

import json

import pytest

from benchmarks import common
from benchmarks.speed import chomsky_peer
from panm_jax.models import get_config


def fake(side: str, scale: float, r: int) -> dict:
    """What a worker prints, at ``scale`` times a base step time."""
    out = {
        "wall_s": 100.0 * scale + r,
        "steps": 500,
        "import_s": 1.0,
        "programs": 40 if side == "peer" else 8,
        "per_length_s": {str(n): scale * n / 40 for n in range(1, 41)},
        "curriculum_s": scale * 0.5,
        "curriculum_min_s": scale * 0.4,
        "fixed_s": scale * (1.0 + 0.1 * r),
        "fixed_min_s": scale * 0.9,
        "params": 67330,
        "versions": {"jax": "0.4.30"} if side == "peer" else {"jax": "0.10"},
    }
    if side == "ours":
        out["buckets"] = [5, 10, 40]
    return out


def test_the_result_line_is_parsed_from_the_workers_output():
    out = fake("peer", 1.0, 0)
    text = "noise\n" + chomsky_peer.RESULT_PREFIX + json.dumps({"wall_s": 1}) + "\n"
    text += chomsky_peer.RESULT_PREFIX + json.dumps(out) + "\nwarning: after\n"
    assert chomsky_peer.parse_result(text) == out
    assert chomsky_peer.parse_result("no result here\n") is None


def test_step_statistics_weigh_every_length_the_same_by_median_and_by_minimum():
    per_length = {1: [1.0, 3.0, 2.0], 2: [5.0, 4.0, 6.0]}
    stats = chomsky_peer.step_statistics(per_length, [7.0, 9.0, 8.0])
    assert stats["per_length_s"] == {1: 2.0, 2: 5.0} and stats["per_length_min_s"] == {1: 1.0, 2: 4.0}
    assert stats["curriculum_s"] == 3.5 and stats["curriculum_min_s"] == 2.5
    assert (stats["fixed_s"], stats["fixed_min_s"]) == (8.0, 7.0)


def test_records_of_several_runs_combine_into_one_naming_each_run(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    paths = []
    for name, key in (("a", "rnn"), ("b", "tape_rnn")):
        row = chomsky_peer.summarise(key, {"peer": [fake("peer", 2.0, 0)], "ours": [fake("ours", 1.0, 0)]})
        env = {"device": "cpu", "date": "2026-01-01", "load_average_before": 1.0}
        paths.append(common.write_results(name, "T", [row], chomsky_peer.COLUMNS, env, "N.", command=f"cmd {name}"))
    json_path = chomsky_peer.combine([str(p) for p in paths], "peers_chomsky")
    record = json.loads(json_path.read_text())
    assert [r["arch"] for r in record["rows"]] == ["rnn", "tape_rnn"]
    assert record["rows"][1]["run"].startswith("cmd b (2026-01-01")
    # The records' paths, outside the repository here, by the placeholder of --combine's values.
    assert record["command"].endswith("python -m benchmarks.speed.chomsky_peer --combine COMBINE,COMBINE")
    assert "combined from 2 runs" in record["notes"] and "cmd a (" in record["rows"][0]["run"]
    assert sorted(p.name for p in json_path.parent.iterdir()) == ["a.json", "b.json", "peers_chomsky.json"]


def test_our_side_of_every_architecture_is_a_registered_model_with_valid_options():
    for arch in chomsky_peer.ARCHS.values():
        get_config(arch.ours, **arch.ours_options)  # raises on an unknown option


def test_rows_alternate_peer_and_ours_and_take_medians_and_ratios(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS_DIR", tmp_path)
    calls = []

    def measure(key, side, r):
        calls.append((key, side, r))
        return fake(side, 2.0 if side == "peer" else 1.0, r)

    written = []
    rows = chomsky_peer.compare(["rnn", "tape_rnn"], 3, measure, on_row=lambda rows: written.append(len(rows)))
    assert calls[:4] == [("rnn", "peer", 0), ("rnn", "ours", 0), ("rnn", "peer", 1), ("rnn", "ours", 1)]
    assert written == [1, 2]
    row = rows[0]
    assert (row["arch"], row["ours_model"], row["rounds"]) == ("rnn", "rnn", 3)
    assert row["peer_fixed40_s"] == pytest.approx(2.2) and row["ours_fixed40_s"] == pytest.approx(1.1)
    assert row["ratio_fixed40"] == pytest.approx(2.0)
    assert row["ratio_curriculum"] == pytest.approx(2.0)
    assert row["ratio_fixed40_min"] == pytest.approx(2.0) and row["ours_curriculum_min_s"] == pytest.approx(0.4)
    assert row["peer_wall500_s"] == 201.0 and row["ours_wall500_s"] == 101.0
    assert (row["peer_programs"], row["ours_programs"], row["ours_buckets"]) == (40, 8, "5 10 40")
    assert len(row["round_results"]["peer"]) == 3

    path = common.write_results("chomsky_peer", "t", rows, chomsky_peer.COLUMNS, {"device": "cpu"}, "notes")
    record = json.loads(path.read_text())
    assert [r["arch"] for r in record["rows"]] == ["rnn", "tape_rnn"]
    assert "ratio_wall500" in record["rows"][0]


def test_arguments_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(SystemExit, match="--archs: unknown gru"):
        chomsky_peer.main(["--archs", "rnn,gru"])
    with pytest.raises(SystemExit, match="--peer-python"):
        chomsky_peer.main(["--peer-python", str(tmp_path / "none")])
    with pytest.raises(SystemExit, match="--peer-repo"):
        chomsky_peer.main(["--peer-python", "/bin/sh", "--peer-repo", str(tmp_path)])
    with pytest.raises(SystemExit, match="--rounds"):
        chomsky_peer.main(["--rounds", "0"])
