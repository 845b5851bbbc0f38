"""The ablation runner's argument checks, made before anything trains."""

from __future__ import annotations

import pytest

from benchmarks.accuracy import ablation


def test_a_bad_results_name_is_refused_before_training(tmp_path):
    with pytest.raises(SystemExit, match=r"--name: expected letters, digits"):
        ablation.main(["--tasks", "copy", "--name", "a b", "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_an_unknown_task_is_refused(tmp_path):
    with pytest.raises(SystemExit, match=r"--tasks: expected tasks among"):
        ablation.main(["--tasks", "dyck", "--workdir", str(tmp_path)])


def test_a_long_variant_gets_a_short_distinct_folder_name():
    short = "panm.score=scaled_dot"
    assert ablation.slug(short) == short  # recorded runs keep their folders
    options = "panm.encoder=bigru,panm.hidden=128,panm.score=scaled_dot,panm.address_bits=8,panm.init=pytorch,"
    long_a = options + "panm.controller_start=encoder_final,panm.controller_reads_mode2=false,select=2L+1"
    long_b = options + "panm.controller_start=encoder_final,panm.controller_reads_mode2=true,select=2L+1"
    a, b = ablation.slug(long_a), ablation.slug(long_b)
    assert len(a) <= ablation.SLUG_MAX and len(b) <= ablation.SLUG_MAX and a != b
    assert a.startswith(long_a[:100]) and ablation.slug(long_a) == a  # readable, and the same every time


def test_the_table_says_a_run_was_short_only_when_it_was():
    full = ablation.table_notes([0, 1, 2], None, ablation.PROTOCOL_STEPS)
    assert "not the protocol's" not in full and "seeds [0, 1, 2]" in full
    assert "trained at most 10,000 steps, not the protocol's 50,000" in ablation.table_notes([0], None, 10_000)
    assert "capped at 7 minutes" in ablation.table_notes([0], 7, None)


# ---- the pointer-count figures (Le et al. 2024, App. D.6, Fig. 8 and 9) ---------------------------------------


def _figure_variants(figure: int) -> list[str]:
    return [ablation._heads(ha, hc) for ha, hc in ablation.FIGURES[figure]["heads"]]


def test_each_figure_names_its_pointer_counts_once():
    fig8 = ["panm.pointer_heads=0,panm.mode2_heads=0", "panm.pointer_heads=1,panm.mode2_heads=0"]
    fig8 += ["panm.mode2_heads=0", "panm.pointer_heads=3,panm.mode2_heads=0"]
    assert _figure_variants(8) == fig8
    assert _figure_variants(9) == ["panm.mode2_heads=0", "default", "panm.mode2_heads=2"]  # H^a=2, H^c=0: one run
    assert [ablation.heads_label(v) for v in _figure_variants(9)] == ["H^a=2, H^c=0", "H^a=2, H^c=1", "H^a=2, H^c=2"]


def test_a_figure_run_is_tested_at_the_k_l_plus_1_lengths_and_evaluated_on_2_l_plus_1():
    config = ablation.variant_config(
        "copy", "panm.pointer_heads=0,panm.mode2_heads=0", 1, None, 300, quick=True, figure=8, eval_every=50,
        eval_examples=64,
    )  # fmt: skip
    assert config.task_options == {"test_lengths": "k(L+1)"} and config.select_mode == "2(L+1)"
    assert config.model_options == {"pointer_heads": 0, "mode2_heads": 0}
    assert (config.num_steps, config.eval_every, config.checkpoint_every, config.eval_examples) == (300, 50, 50, 64)
    assert config.optimizer.name == "adam"  # --quick's budget


def test_the_curve_is_read_from_each_seeds_evaluations_and_averaged(tmp_path):
    import json

    folder = tmp_path / "run"
    folder.mkdir()
    lines = [
        {"step": 50, "time": 0.0, "loss": 1.0},
        {"step": 50, "validation": {"2(L+1)": {"token_accuracy": 0.25, "loss": 2.0}}},
        {"step": 100, "validation": {"2(L+1)": {"token_accuracy": 0.5, "loss": 1.0}}},
        {"step": 100, "validation": {"2(L+1)": {"token_accuracy": 0.625, "loss": 1.0}}},  # resumed: the later one
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    curve = ablation.validation_curve(folder, "2(L+1)", "token_accuracy")
    assert curve == [(50, 25.0), (100, 62.5)]
    summary = ablation.curve_summary([{"curve": curve}, {"curve": [(50, 35.0), (100, 72.5), (150, 80.0)]}])
    assert summary["steps"] == [50, 100] and summary["per_seed"] == [[25.0, 62.5], [35.0, 72.5]]
    assert summary["mean"] == [30.0, 67.5] and summary["std"] == [7.07, 7.07]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--figure", "7"], r"--figure: expected one of \[8, 9\], got 7"),
        (["--figure", "8", "--variant", "default"], r"--variant: a figure's variants are its pointer counts"),
        (
            ["--figure", "8", "--tasks", "id_sort"],
            r"--tasks: expected tasks among \['copy', 'reverse'\], got 'id_sort'",
        ),
        (["--figure", "9", "--quick"], r"--quick: expected a budget, --steps N"),
        (["--figure", "9", "--steps", "10", "--eval-every", "0"], r"--eval-every: expected a positive integer, got 0"),
    ],
)
def test_a_bad_figure_command_is_refused_before_training(tmp_path, argv, message):
    with pytest.raises(SystemExit, match=message):
        ablation.main([*argv, "--workdir", str(tmp_path)])
    assert not any(tmp_path.iterdir())
