"""``panm-jax train``: train a model on a task, then evaluate it over the length modes.

    panm-jax train --task copy --model panm --workdir runs/copy-panm
    panm-jax train --config configs/demo.toml --set model_options.hidden=128 --set num_steps=500
    panm-jax train --task copy --model panm --seeds 0,1,2
    panm-jax train --task copy --model panm --seeds 0,1 --learning-rates 1e-3,3e-4,1e-4 --workdir runs/grid

The whole config is checked before anything is created: a user's mistake (a
bad config field or flag value, a workdir path orbax cannot write under, a
workdir in use by another run or holding a run of other settings) raises an
error that ``panm_jax.cli.main`` prints as one line, ``error: ...``, exiting
with code 2; a run stopped by a non-finite loss, or whose results hold a
non-finite number, exits with code 1; a path the system refuses (a full disk,
no permission, a file where the run keeps a folder) exits with code 3, naming
it; Ctrl-C or SIGTERM exits with code 130, saying from which step the same
command resumes.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import jax
from rich.console import Console

from panm_jax.errors import UserError
from panm_jax.train.config import COMPUTE_DTYPES, SEED_MAX

__all__ = ["register"]

EPILOG = (
    "settings (--set FIELD=VALUE): 'panm-jax train --settings' lists each; model and task options "
    "(--set model_options.NAME=VALUE, --set task_options.NAME=VALUE): 'panm-jax models show MODEL' and "
    "'panm-jax tasks show TASK' list each with its type, default, allowed values and meaning"
)


def register(subparsers) -> None:
    """Add the ``train`` sub-command to the ``panm-jax`` parser."""
    p = subparsers.add_parser(
        "train",
        help="train a model on a task, evaluate it over the length modes",
        description="Train a model on a task (resuming if WORKDIR holds checkpoints), then evaluate the best "
        "checkpoint at every test length and write results.{json,csv,md} and accuracy.png in WORKDIR. "
        "Settings come from --config (TOML or JSON), then --set overrides, then the flags below.",
        epilog=EPILOG,
    )
    p.add_argument(
        "--settings",
        action="store_true",
        help="list every setting (a field of --config, or --set FIELD=VALUE) with its type, default, allowed "
        "values and meaning, and exit",
    )
    p.add_argument("--config", help="a TOML or JSON file of TrainConfig fields")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a config field, e.g. optimizer.learning_rate=1e-3 or model_options.hidden=128",
    )
    p.add_argument("--task", help="task name (panm-jax tasks lists them)")
    p.add_argument("--model", help="model name (panm-jax models lists them)")
    p.add_argument("--steps", type=int, dest="num_steps", help="number of training steps")
    p.add_argument("--batch-size", type=int, dest="batch_size")
    p.add_argument("--lr", type=float, help="learning rate")
    p.add_argument("--seed", type=int)
    p.add_argument(
        "--seeds",
        metavar="S1,S2,...",
        help="train several seeds of the same settings together, in one compiled program (each seed's "
        "folder is what its single run writes); with --workdir W, seed S goes to W/s<S>",
    )
    p.add_argument(
        "--learning-rates",
        metavar="R1,R2,...",
        dest="learning_rates",
        help="train the seeds (--seeds, or the one seed) at each of these learning rates, all together in one "
        "compiled program, replacing optimizer.learning_rate (each member's folder is what its single run "
        "writes); with --workdir W, rate R and seed S go to W/lr<R>/s<S> (e.g. W/lr3e-4/s0)",
    )
    p.add_argument(
        "--on-nan",
        choices=["stop", "skip-batch"],
        dest="on_nan",
        help="on a NaN or infinite loss: stop with an error naming the step (default), or skip the batch "
        "(parameters and optimiser state unchanged)",
    )
    p.add_argument(
        "--compute-dtype",
        choices=COMPUTE_DTYPES,
        dest="compute_dtype",
        help="the forward pass's dtype: float32 (default), or bfloat16 for mixed precision on a GPU or TPU "
        "(parameters and optimiser state stay float32)",
    )
    p.add_argument("--workdir", default=None, help="run folder (default runs/<task>-<model>-s<seed>)")
    p.add_argument(
        "--allow-unverified",
        action="store_true",
        dest="allow_unverified",
        help="resume from a checkpoint that has no checksums.sha256 (otherwise taken as damaged and set aside)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs still go to metrics.jsonl)")
    p.set_defaults(func=_train)


# The flags that set a config field: field -> (flag, argparse dest). A message about such a field names the flag.
FLAGS = {
    "task": ("--task", "task"),
    "model": ("--model", "model"),
    "num_steps": ("--steps", "num_steps"),
    "batch_size": ("--batch-size", "batch_size"),
    "seed": ("--seed", "seed"),
    "on_nan": ("--on-nan", "on_nan"),
    "compute_dtype": ("--compute-dtype", "compute_dtype"),
    "optimizer.learning_rate": ("--lr", "lr"),
}


def _config_from_args(args):
    from panm_jax.train.config import ConfigError, load_config

    overrides = list(args.set)
    for field, (_, dest) in FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            overrides.append(f"{field}={json.dumps(value)}")
    try:
        return load_config(args.config, overrides)
    except ConfigError as err:
        if err.field in FLAGS and getattr(args, FLAGS[err.field][1]) is not None:
            raise ConfigError(FLAGS[err.field][0], err.message) from err
        raise


def _error(message: str, code: int = 2) -> int:
    """One line on stderr, no traceback; returns the exit code."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    return code


def _check_workdir_arg(workdir: str | None) -> None:
    """A given ``--workdir`` is a path orbax can write checkpoints under (``engine.check_workdir_path``)."""
    from panm_jax.train.engine import check_workdir_path

    if workdir is not None and not workdir.strip():
        raise UserError(f"--workdir: expected a folder path, got {workdir!r}")
    if workdir is not None:
        check_workdir_path(workdir, "--workdir")


def _resume_points(workdirs: list[Path]) -> str:
    """``"runs/a from step 50, runs/b from the start"``: where the same command resumes each folder."""
    where = []
    for w in workdirs:
        steps = sorted(int(p.name) for p in (w / "checkpoints").glob("*") if p.name.isdigit())
        where.append(f"{w} from step {steps[-1]}" if steps else f"{w} from the start (no checkpoint yet)")
    return ", ".join(where)


def _interrupted(err: KeyboardInterrupt, workdirs: list[Path]) -> int:
    """Ctrl-C or SIGTERM: one line saying where each folder's run resumes; the exit code."""
    from panm_jax.cli import EXIT_CODES, interrupted_by

    return _error(
        f"{interrupted_by(err)}; no partial checkpoint kept and the lock released; the same command resumes "
        f"{_resume_points(workdirs)}",
        code=EXIT_CODES["interrupted"],
    )


# What the collectives and the coordination service raise when a process of the run is gone.
_LOST_PEER = re.compile(r"Gloo|heartbeat|Connection (reset|refused|closed)|UNAVAILABLE|DEADLINE_EXCEEDED|unhealthy")


def _lost_peer(err: BaseException) -> bool:
    """Whether ``err`` says that another process of a multi-process run is gone."""
    return (
        jax.process_count() > 1
        and isinstance(err, (jax.errors.JaxRuntimeError, ValueError))  # ValueError: process_allgather's
        and bool(_LOST_PEER.search(str(err)))
    )


def _lost_processes() -> list[int]:
    """The processes of the run that the coordination service no longer hears from, asked until it names one
    (it does once the lost one has missed its heartbeats: ``PANM_JAX_HEARTBEAT_TIMEOUT``; JAX may end this
    process before that, and the supervising parent then names it, ``cli/supervise.py``); ``[0]`` when the
    service itself, run by process 0, no longer answers; empty when it cannot tell."""
    import time

    from jax._src import distributed  # the client of JAX's coordination service (no public handle)

    from panm_jax.train.sharding import HEARTBEAT_TIMEOUT_S, distributed_settings

    everyone = list(range(jax.process_count()))
    patience = (distributed_settings() or {}).get("heartbeat_timeout_seconds", HEARTBEAT_TIMEOUT_S) + 5
    until = time.monotonic() + patience
    while True:
        try:
            live = set(distributed.global_state.client.get_live_nodes(everyone))
        except Exception:  # noqa: BLE001 - the service is gone with process 0, or JAX's API changed
            return [0] if jax.process_index() != 0 else []
        lost = [i for i in everyone if i not in live]
        if lost or time.monotonic() > until:
            return lost
        time.sleep(0.5)


def _stop_lost(err: BaseException, workdirs: list[Path]) -> None:
    """A process of the run is gone: one line, then this process ends at once with exit code 4 (``os._exit``:
    JAX's exit would wait on the lost process at its shutdown barrier, then abort). The lock is released and
    the checkpoints closed already (the exception has unwound the run)."""
    import os

    from panm_jax.cli import EXIT_CODES
    from panm_jax.cli.supervise import lost_line

    lost = _lost_processes()
    who = f"process {', '.join(map(str, lost))}" if lost else "another process"
    reason = " ".join(str(err).split())[:160]
    line = lost_line(jax.process_index(), jax.process_count(), who, reason, _resume_points(workdirs))
    sys.stdout.flush()
    sys.stderr.flush()
    # One write: JAX may log its own fatal report from another thread at this very moment.
    os.write(sys.stderr.fileno(), f"error: {line}\n".encode())
    os._exit(EXIT_CODES["process lost"])


def _guarded(train, workdirs: list[Path]) -> list[dict] | int:
    """``train()``'s results records, or the exit code of how it failed (a line said it): a non-finite
    loss (1), Ctrl-C or SIGTERM (130), a lost process of a multi-process run (4, ending this process)."""
    from panm_jax.train.engine import NonFiniteLossError

    try:
        return train()
    except NonFiniteLossError as err:
        return _error(str(err), code=1)
    except KeyboardInterrupt as err:
        return _interrupted(err, workdirs)
    except Exception as err:
        if _lost_peer(err):
            _stop_lost(err, workdirs)
        raise


def _failed(records: list[dict]) -> int:
    """Exit code 1, with a line, when a results record says the run failed; else 0."""
    rates = {r["config"]["optimizer"]["learning_rate"] for r in records}

    def who(r: dict) -> str:
        rate = f", learning rate {r['config']['optimizer']['learning_rate']:g}" if len(rates) > 1 else ""
        return f"seed {r['config']['seed']}{rate}"

    failed = [f"{who(r)}: {r['failed']}" for r in records if r.get("failed")]
    if failed:
        return _error("; ".join(failed), code=1)
    return 0


def _train(args) -> int:
    from panm_jax.cli.supervise import needs_supervisor, supervise
    from panm_jax.train import report
    from panm_jax.train.loop import train_and_evaluate
    from panm_jax.train.sharding import distributed_settings, is_primary, maybe_initialize_distributed

    if args.settings:
        return _print_settings()
    _check_workdir_arg(args.workdir)
    seeds = _parse_seeds(args)
    rates = _parse_learning_rates(args)
    config = _config_from_args(args)  # the whole config is checked before anything is created
    if needs_supervisor():  # one process of several: train in a child that JAX may end (cli/supervise.py)
        settings = distributed_settings() or {}
        workdirs = _workdirs(args, config, seeds, rates)
        return supervise(lambda: _resume_points(workdirs), settings.get("process_id"), settings.get("num_processes"))
    maybe_initialize_distributed()  # before the first JAX call below (a multi-process run: docs/distributed.md)
    console = Console(quiet=not is_primary())  # with several processes, process 0 alone prints
    if seeds is not None or rates is not None:
        return _train_seeds(args, config, seeds or [config.seed], rates, console)
    (workdir,) = _workdirs(args, config, seeds, rates)
    console.print(
        f"[bold]panm-jax train[/] {config.model} on {config.task} -> {workdir} "
        f"({jax.device_count()} x {jax.devices()[0].device_kind})"
    )
    finished = _finished_record(config, workdir)
    if finished is not None:  # the same command again: the run's own table, nothing trained or evaluated again
        console.print(
            f"[dim]{workdir} finished this run (step {finished['step']}): its table, read from "
            f"{workdir / 'results.json'}; panm-jax eval --workdir {workdir} --recompute evaluates again[/dim]",
            highlight=False,
            soft_wrap=True,
        )
        report.print_results(finished, console)
        return _failed([finished])
    results = _guarded(
        lambda: [
            train_and_evaluate(
                config,
                workdir,
                progress=not args.no_progress,
                console=console,
                allow_unverified=args.allow_unverified,
            )
        ],
        [workdir],
    )
    if isinstance(results, int):
        return results
    (results,) = results
    report.print_results(results, console)
    console.print(f"wrote {workdir / 'results.json'} (.csv, .md) and {workdir / 'accuracy.png'}")
    return _failed([results])


def _finished_record(config, workdir: Path) -> dict | None:
    """The results record of ``workdir`` when it is the end of this very run (the same configuration, at its
    ``num_steps``), else ``None``: a run is then trained (or resumed) and evaluated as usual."""
    from panm_jax.train import report

    try:
        record = report.load_results(workdir / "results.json")
    except UserError:  # none, or not a record
        return None
    wanted = report.recorded_config(config)
    return record if record.get("config") == wanted and record.get("step") == config.num_steps else None


def _parse_seeds(args) -> list[int] | None:
    """``--seeds 0,1,2`` -> ``[0, 1, 2]`` (None without it); malformed lists and ``--seed`` beside it refused."""
    if args.seeds is None:
        return None
    if args.seed is not None:
        raise UserError("--seeds: give either --seed or --seeds, not both")
    parts = [p.strip() for p in args.seeds.split(",")]
    if not all(re.fullmatch(r"-?\d+", p) for p in parts):
        raise UserError(f"--seeds: expected comma-separated integers (e.g. 0,1,2,3,4), got {args.seeds!r}")
    seeds = [int(p) for p in parts]
    if not all(0 <= seed <= SEED_MAX for seed in seeds):  # the config's bound of a seed, named by this flag
        raise UserError(
            f"--seeds: expected comma-separated integers in [0, {SEED_MAX}] (the seeds JAX's random keys tell "
            f"apart), got {args.seeds!r}"
        )
    if len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds: expected distinct seeds, got {args.seeds!r}")
    return seeds


def _parse_learning_rates(args) -> list[float] | None:
    """``--learning-rates 1e-3,3e-4`` -> ``[0.001, 0.0003]`` (None without it); anything but distinct positive
    finite numbers, and ``--lr`` beside it, refused."""
    if args.learning_rates is None:
        return None
    if args.lr is not None:
        raise UserError("--learning-rates: give either --lr or --learning-rates, not both")
    try:
        rates = [float(p) for p in args.learning_rates.split(",")]
    except ValueError:
        rates = []
    if not rates or not all(math.isfinite(r) and r > 0 for r in rates):
        raise UserError(
            f"--learning-rates: expected comma-separated positive numbers (e.g. 1e-3,3e-4,1e-4), got "
            f"{args.learning_rates!r}"
        )
    if len(set(rates)) != len(rates):
        raise UserError(f"--learning-rates: expected distinct learning rates, got {args.learning_rates!r}")
    return rates


def _members(config, seeds: list[int], rates: list[float] | None) -> list:
    """The configs of the runs trained together: one per seed, or with ``rates`` every rate x every seed."""
    import dataclasses

    if rates is None:
        return [config.replace(seed=s) for s in seeds]
    return [
        config.replace(seed=s, optimizer=dataclasses.replace(config.optimizer, learning_rate=r))
        for r in rates
        for s in seeds
    ]


def _workdirs(args, config, seeds: list[int] | None, rates: list[float] | None) -> list[Path]:
    """The run folder of each run of this command: ``--workdir`` (or ``runs/TASK-MODEL-sSEED``) for one run;
    with ``--seeds`` or ``--learning-rates``, member (r, s) in ``W/lr<r>/s<s>`` (``rate_name``), or ``W/s<s>``
    without rates (``runs/TASK-MODEL-lr<r>-s<s>`` without ``--workdir``)."""
    from panm_jax.train.seeds import rate_name

    if seeds is None and rates is None:
        return [Path(args.workdir or f"runs/{config.task}-{config.model}-s{config.seed}")]
    seeds = seeds or [config.seed]
    names = [f"s{s}" for s in seeds] if rates is None else [f"{rate_name(r)}/s{s}" for r in rates for s in seeds]
    if args.workdir:
        return [Path(args.workdir) / name for name in names]
    return [Path(f"runs/{config.task}-{config.model}-{name.replace('/', '-')}") for name in names]


def _print_settings() -> int:
    """``panm-jax train --settings``: every field of ``TrainConfig`` and ``OptimizerConfig``, as declared."""
    from panm_jax.cli._options import settings_docs
    from panm_jax.cli._tables import print_options, print_wrapped

    console = Console()
    print_wrapped(
        console,
        "settings of panm-jax train (a field of --config's file, or --set FIELD=VALUE; the optimiser's as "
        "optimizer.NAME):",
    )
    print_options(console, settings_docs())
    return 0


def _train_seeds(args, config, seeds: list[int], rates: list[float] | None, console: Console) -> int:
    """Train ``seeds`` together; with ``rates``, the grid of every rate x every seed, member (r, s) in
    ``W/lr<r>/s<s>`` (``rate_name``)."""
    from panm_jax.train import report
    from panm_jax.train.engine import check_workdir_path
    from panm_jax.train.loop import train_seeds

    configs = _members(config, seeds, rates)
    workdirs = _workdirs(args, config, seeds, rates)
    for w in workdirs:  # before any folder's lock is taken
        check_workdir_path(w, "--workdir" if args.workdir else "workdir")
    grid = "" if rates is None else f" x learning rates {','.join(f'{r:g}' for r in rates)}"
    console.print(
        f"[bold]panm-jax train[/] {config.model} on {config.task}, seeds {','.join(map(str, seeds))}{grid} "
        f"together -> {', '.join(map(str, workdirs))} ({jax.device_count()} x "
        f"{jax.devices()[0].device_kind})"
    )
    records = _guarded(
        lambda: train_seeds(
            configs,
            workdirs,
            progress=not args.no_progress,
            console=console,
            allow_unverified=args.allow_unverified,
        ),
        workdirs,
    )
    if isinstance(records, int):
        return records
    for i in range(0, len(records), len(seeds)):  # one table per learning rate
        if rates is not None:
            console.print(f"learning rate {rates[i // len(seeds)]:g}:")
        report.print_seed_summary(records[i : i + len(seeds)], console)
    console.print(f"wrote results.json (.csv, .md) and accuracy.png in each of {', '.join(map(str, workdirs))}")
    return _failed(records)
