"""The SCAN and Mathematics runner: its argument checks (made before anything trains), the paper's
statistics over seeds, the published column and PANM's encoder choice."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from benchmarks.accuracy import published, seq2seq
from panm_jax.tasks.mathematics import MODULES
from panm_jax.tasks.scan import CUTOFFS


def args(**overrides) -> argparse.Namespace:
    return seq2seq.parse_args([f"--{k.replace('_', '-')}={v}" for k, v in overrides.items()])


def test_validation_every_so_many_steps_is_an_option_and_must_be_positive():
    assert seq2seq.make_config("scan-22", "transformer", 0, args()).eval_every == 1_000  # earlier runs resume
    assert seq2seq.make_config("scan-22", "transformer", 0, args(eval_every=250)).checkpoint_every == 250
    with pytest.raises(SystemExit, match="--eval-every: expected a positive integer, got 0"):
        args(eval_every=0)


def test_a_model_the_runner_cannot_run_is_refused_by_name(tmp_path):
    with pytest.raises(SystemExit, match=r"--models: expected models among universal_transformer_rpe, .*got 'lstm'"):
        seq2seq.main(["--cutoffs", "22", "--math", "", "--models", "lstm", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_nothing_to_run_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"expected at least one of each"):
        seq2seq.main(["--cutoffs", "", "--math", "", "--workdir", str(tmp_path)])


@pytest.mark.parametrize("cutoff", ["23", "48", "x"])
def test_a_cutoff_that_table_4_does_not_have_is_refused_by_name(tmp_path, cutoff):
    with pytest.raises(SystemExit, match=rf"^--cutoffs: expected cut-offs among 22, 24, .*, 40, got '{cutoff}'$"):
        seq2seq.main(["--cutoffs", f"22,{cutoff}", "--math", "", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_an_unknown_module_or_encoder_is_refused_by_name(tmp_path):
    with pytest.raises(SystemExit, match=r"^--math: expected modules among add_or_sub, place_value, got 'algebra'$"):
        seq2seq.main(["--cutoffs", "", "--math", "algebra", "--workdir", str(tmp_path)])
    with pytest.raises(
        SystemExit, match=r"^--panm-encoder: expected one of paper, transformer, transformer_rpe, got 'lstm'$"
    ):
        seq2seq.main(["--panm-encoder", "lstm", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_the_defaults_are_table_4s_cutoffs_modules_and_rows():
    a = args()
    assert seq2seq.parse_items(a) == [f"scan-{c}" for c in CUTOFFS] + ["add_or_sub", "place_value"]
    assert CUTOFFS == published.SCAN_CUTOFFS == (22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 40)
    assert tuple(MODULES) == published.MATHEMATICS_MODULES
    rows = [published.seq2seq_row("scan-22", m, seq2seq.encoder_of("scan-22", m, "paper")) for m in seq2seq.MODELS]
    assert rows == ["U. TRM + RPE", "TRM + RPE", "U. TRM", "TRM", "PANM"]


def test_scan_reports_the_median_over_seeds_and_mathematics_the_mean():
    # Table 4: SCAN "median of 5 runs"; Table 19: Mathematics "mean ± std over 5 runs".
    assert seq2seq.summary("scan-22", [0.0, 10.0, 90.0]) == (10.0, "10.0 (0.0-90.0)")
    assert seq2seq.summary("scan-40", [100.0, 0.0, 100.0, 100.0, 0.0]) == (100.0, "100.0 (0.0-100.0)")
    assert seq2seq.summary("add_or_sub", [0.0, 10.0, 90.0]) == (pytest.approx(100 / 3), "33.3 ± 49.3")
    assert seq2seq.summary("scan-25", [12.34]) == (12.34, "12.3")


def test_the_published_column_has_the_papers_cells():
    cell = published.seq2seq_cell
    # Table 4, SCAN
    assert cell("scan-22", "panm_transformer", "transformer").text() == "22"
    assert cell("scan-24", "panm_transformer", "transformer").text() == "47"
    assert cell("scan-25", "universal_transformer_rpe", None).text() == "71"
    assert cell("scan-26", "transformer_rpe", None).text() == "61"
    assert cell("scan-32", "transformer_rpe", None).text() == "94"
    assert cell("scan-28", "transformer", None).text() == "8"
    assert cell("scan-40", "universal_transformer", None).text() == "—"  # not legible as printed
    assert cell("scan-22", "panm_transformer", "transformer_rpe") is None  # no such row in the paper
    # Table 19, Mathematics (fractions in the paper, % here), PANM's row by its encoder
    assert cell("add_or_sub", "panm_transformer", "transformer").text() == "91 ± 1"
    assert cell("place_value", "panm_transformer", "transformer").text() == "15 ± 2"
    assert cell("add_or_sub", "panm_transformer", "transformer_rpe").text() == "97 ± 2"
    assert cell("place_value", "panm_transformer", "transformer_rpe").text() == "86 ± 5"
    assert cell("place_value", "universal_transformer_rpe", None).text() == "75 ± 10"
    assert cell("add_or_sub", "transformer", None).text() == "89 ± 1"
    # every (item, model) of the defaults has a cell, legible or marked
    a = args()
    for item in seq2seq.parse_items(a):
        for model in seq2seq.MODELS:
            assert cell(item, model, seq2seq.encoder_of(item, model, "paper")) is not None, (item, model)


def test_the_encoder_choice_builds_the_named_encoder():
    from flax import nnx

    from panm_jax.models.panm import build_encoder

    for item, choice, name, relative in [
        ("scan-22", "paper", "transformer", False),  # Sec. 3.3: the plain Transformer on SCAN
        ("add_or_sub", "paper", "transformer_rpe", True),  # App. D.3: TRM + RPE on Mathematics
        ("add_or_sub", "transformer", "transformer", False),
        ("scan-22", "transformer_rpe", "transformer_rpe", True),
    ]:
        config = seq2seq.make_config(item, "panm_transformer", 0, args(panm_encoder=choice)).model_config
        small = dataclasses.replace(config, hidden=16, encoder_layers=1)
        encoder = nnx.eval_shape(lambda c=small: build_encoder(c, 4, nnx.Rngs(0)))  # built, no arrays computed
        assert config.encoder == name and encoder.relative is relative, (item, choice)
    assert "encoder" not in seq2seq.make_config("scan-22", "transformer", 0, args()).model_options


def test_the_table_reads_finished_runs_back_with_the_papers_statistic_and_row(tmp_path):
    import json

    a = args(cutoffs="22", math="", seeds="0,1,2", workdir=str(tmp_path))
    accuracies = {"panm_transformer": [0.5, 0.1, 0.3], "universal_transformer_rpe": [0.0, 0.2, 0.25]}
    for model, values in accuracies.items():
        for seed, value in enumerate(values):
            run = seq2seq.folder(tmp_path, "scan-22", model, seed, a)
            run.mkdir(parents=True)
            config = seq2seq.make_config("scan-22", model, seed, a)
            mode = {"mode": "test", "sequence_accuracy": value}
            record = {"metric": "sequence_accuracy", "step": 150, "modes": [mode], "config": config.to_dict()}
            (run / "results.json").write_text(json.dumps(record))
            # seed 1 fits at step 100, the others never: token accuracy on the training split's examples
            curve = [(50, 0.6), (100, 0.995 if seed == 1 else 0.9), (150, 0.97)]
            lines = [{"step": 150, "loss": 1.0}] + [
                {"step": step, "validation": {"train": {"token_accuracy": acc}}} for step, acc in curve
            ]
            (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows = seq2seq.table_rows(["scan-22"], list(accuracies), [0, 1, 2], a, tmp_path)
    panm, ut = rows
    assert panm["fit"] == "1 of 3" and panm["fit_step"] == "-,100,-" and panm["train_accuracy"] == "97.0,99.5,97.0"
    assert panm["model"] == "panm_transformer (transformer encoder)" and panm["paper row"] == "PANM"
    assert panm["exact_match"] == "30.0 (10.0-50.0)" and panm["published"] == "22"
    assert panm["ours - published"] == "+8.0" and panm["steps"] == "150,150,150"
    assert ut["paper row"] == "U. TRM + RPE" and ut["exact_match"] == "20.0 (0.0-25.0)"
    assert ut["ours - published"] == "+0.0" and panm["chance"] == ut["chance"] == "0.15"  # 6 of 3,920
