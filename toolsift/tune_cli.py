"""``toolsift tune``: fine-tune the index's model on its examples and feedback, publish it only
if it beats the model in use on held-back requests; ``--rollback`` returns to the model before;
``--history`` lists the tuned models kept. Running servers follow the index folder."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import click
import orjson

from toolsift.index.feedback_log import feedback_log_path
from toolsift.router.usage import FeedbackLimits, UsageBook
from toolsift.settings import Settings
from toolsift.tuning.jobs import read_status, tune_lock, write_status
from toolsift.tuning.shadow import drop
from toolsift.tuning.trainer import Recipe
from toolsift.tuning.tune import TuneOptions, TuneReport, history, rollback, tune
from toolsift.tuning.tune import promote as promote_staged


@click.command("tune")
@click.option("--index", "index_path", type=click.Path(path_type=Path),
              help="Index folder [default: TOOLSIFT_INDEX_PATH or var/index].")  # fmt: skip
@click.option("--kind", type=click.Choice(["auto", "full", "adapter"]), default="auto", show_default=True,
              help="full: fine-tune the whole encoder; adapter: a query-side map over the frozen model; "
              "auto: train each the model allows and keep the best.")  # fmt: skip
@click.option("--time-limit", type=click.FloatRange(1, 24 * 3600), default=900, show_default=True,
              help="Seconds of training per kind; the model trained so far is then judged.")  # fmt: skip
@click.option("--hold-out", type=click.FloatRange(0.05, 0.5), default=0.2, show_default=True,
              help="Share of the requests held back to judge the tuned model.")  # fmt: skip
@click.option("--epochs", type=click.IntRange(1, 20), default=1, show_default=True)
@click.option("--learning-rate", type=click.FloatRange(1e-7, 1.0), default=Recipe.learning_rate, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--hard-negatives", is_flag=True, help="Also push each request from its hardest wrong tool (measured worse)."
)
@click.option("--rollback", "roll_back", is_flag=True, help="Serve the model in use before the current tuned one.")
@click.option("--shadow", is_flag=True, help="Stage the tuned model beside the one in use: servers rank with both, "
              "serve the old one and log both rankings.")  # fmt: skip
@click.option("--promote", is_flag=True, help="Publish the model staged with --shadow.")
@click.option("--shadow-off", is_flag=True, help="Drop the model staged with --shadow.")
@click.option("--history", "show_history", is_flag=True, help="List the tuned models kept beside the index.")
@click.option("--status", "show_status", is_flag=True, help="How the last tune of the index went (or is going).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def tune_command(
    index_path: Path | None, kind: str, time_limit: float, hold_out: float, epochs: int, learning_rate: float,
    seed: int, hard_negatives: bool, roll_back: bool, shadow: bool, promote: bool, shadow_off: bool, show_history: bool, show_status: bool, quiet: bool, as_json: bool,
) -> None:  # fmt: skip
    """Fine-tune the index's embedding model on the requests it has seen: the catalog's examples and
    the feedback that ranks (trusted, or agreed by a quorum). A seeded share of the requests is held
    back; the tuned model is published (the catalog re-embedded, the index folder swapped, servers
    follow) only if it ranks them better than the model in use, beyond the noise."""
    settings = Settings.from_env(None, index_path=index_path)
    folder = settings.index_path
    if show_history:
        click.echo(orjson.dumps(history(folder), option=orjson.OPT_INDENT_2).decode())
        return
    if show_status:
        click.echo(orjson.dumps(read_status(folder), option=orjson.OPT_INDENT_2).decode())
        return
    if shadow_off:
        click.echo(f"{folder}: shadow model dropped" if drop(folder) else f"{folder}: no shadow model staged")
        return
    if roll_back or promote:
        with tune_lock(folder):
            before, after = rollback(folder) if roll_back else (None, promote_staged(folder))
        if settings.redis_url:
            from toolsift.service.replicas import Replicas

            Replicas(settings.redis_url, settings.redis_prefix).announce("index", after)
        click.echo(f"{folder}: now serving {after}" + (f" (was {before})" if before else ""))
        return
    options = TuneOptions(kind=kind, time_limit=time_limit, hold_out=hold_out, seed=seed,  # type: ignore[arg-type]
                          recipe=replace(Recipe(), epochs=epochs, learning_rate=learning_rate, seed=seed,
                                          hard_negatives=hard_negatives))  # fmt: skip
    say = (lambda _: None) if as_json else (lambda line: click.echo(line, err=True))
    with tune_lock(folder):
        write_status(folder, "running", options=asdict(options))
        try:
            report = tune(folder, feedback_book(folder, settings), options, progress=not (quiet or as_json), say=say,
                          shadow=shadow)  # fmt: skip
        except Exception as error:
            write_status(folder, "failed", error=str(error))
            raise
        write_status(folder, "done", report=report.document())
    if (
        report.published_model or report.shadow_model
    ) and settings.redis_url:  # replicas load it now instead of at their next poll
        from toolsift.service.replicas import Replicas

        Replicas(settings.redis_url, settings.redis_prefix).announce("index", report.published_model or "shadow")
    click.echo(orjson.dumps(report.document(), option=orjson.OPT_INDENT_2).decode() if as_json else summary(report))


def feedback_book(folder: Path, settings: Settings) -> UsageBook:
    """The feedback the service keeps for ``folder``, read from its log, with its quorum."""
    from toolsift.service.usage_feed import UsageFeed  # the service package is heavy: only when used

    feed = UsageFeed(UsageBook(FeedbackLimits(quorum=settings.feedback_quorum)))
    if feedback_log_path(folder).is_file():
        feed.open_log(feedback_log_path(folder))
    return feed.book


def summary(report: TuneReport) -> str:
    lines = [f"{report.pairs} pairs ({report.train_pairs} trained on, {report.held_requests} requests held back)"]
    for c in report.candidates:
        t = c.training
        lines.append(f"  {c.kind}: {t['pairs_seen']} pairs in {t['seconds']} s ({t['pairs_per_second']}/s): {c.reason}")
    lines.append(report.reason)
    return "\n".join(lines)
