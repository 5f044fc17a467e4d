"""Abstention: does toolsift say "no tool" when none fits, and keep the tools when one does?

Per dataset, every sampled query with relevant tools is routed three ways, all with
``min_confidence`` 0 so that each threshold of a sweep is applied afterwards to the same matches
(``confidence.abstention``, the router's own rule, adaptive k included):

- **answerable**: against the whole catalog. Recall@5 at a threshold, minus Recall@5 with no
  abstention, on the same queries (paired interval);
- **relevant removed**: with its relevant tools taken out of reach (the router's scope), so no tool
  fits by construction; their near-duplicates stay in, a hard and pessimistic case. The share
  that abstains;
- and the **generic no-tool requests** of ``benchmarks/abstention/no_tool_eval.yaml`` (small talk,
  creative writing, opinions, explanations, reasoning, advice; English, German, Spanish, Korean;
  none of them in the set toolsift calibrates on): the share that abstains, per language;
- the dataset's own requests labelled with no tool, where it has them: the share that abstains.

**Session prefix**: for each generic no-tool request, a session whose previous turn delivered an
answerable query's tools; the prefix changes when the no-tool turn delivers a tool the session
did not have. **Calibration**: the top-5 matches of answerable queries binned by confidence; per
bin the mean confidence against the share that is relevant (reliability table), and the expected
calibration error (the bins' gaps weighted by their share of matches), for the confidence each
match reports and for the shape's before it (what the abstention compares: the reported one is
shared with the request's crowd of near-equal matches, ``confidence.crowd_share``, and
recalibrated once the catalog has labelled requests).

**Fed** (``fed`` > 0): a seeded share of the answerable queries is learned as feedback first and
only the rest is scored, as a catalog in use would be. The router then recalibrates each match's
confidence from those labelled requests (``confidence.Recalibration``): the reliability table is
given for the reported confidences and for the shape's before them. The sweep is always
over the shape's confidence of the best match, which is what the router's abstention compares
(recalibration changes what a match reports, not whether the answer abstains).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from toolsift.bench.datasets import Dataset
from toolsift.bench.feedback import feedback_of, split
from toolsift.bench.metrics import interval95, recall_at, share_interval95
from toolsift.router import Router, Scope
from toolsift.router.confidence import DEFAULT_MIN_CONFIDENCE, FLOOR_SHARE, abstention

THRESHOLDS = (0.0, 0.05, 0.1, 0.125, 0.15, 0.2, 0.3, 0.5)
NO_TOOL_EVAL = Path(__file__).resolve().parents[2] / "benchmarks" / "abstention" / "no_tool_eval.yaml"
BINS = 10

Routed = list[tuple[str, float]]
"""A routed query's matches, best first: (tool name, confidence)."""


def generic_no_tool(path: Path = NO_TOOL_EVAL) -> dict[str, list[str]]:
    """The benchmark's no-tool requests by language."""
    loaded: dict[str, list[str]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def run_abstention(
    dataset: Dataset,
    router: Router,
    k: int = 5,
    thresholds: Sequence[float] = THRESHOLDS,
    no_tool: dict[str, list[str]] | None = None,
    fed: float = 0.0,
) -> dict[str, Any]:
    queries = [query for query in dataset.queries if query.routable and query.relevant]
    learned, queries = split(queries, fed) if fed > 0 else ([], queries)
    shape = Router(router.index, router.embedder, replace(router.ranking, recalibrate=False))
    for each in (router, shape):
        if learned:
            each.learn(feedback_of(learned))
    everything = np.arange(len(dataset.catalog), dtype=np.int64)
    answerable: list[tuple[Routed, tuple[str, ...]]] = []
    reported: list[tuple[Routed, tuple[str, ...]]] = []
    removed: list[Routed] = []
    for query in queries:
        answerable.append((_routed(shape, query.text, k), query.relevant))
        reported.append((_routed(router, query.text, k), query.relevant))
        hidden = np.asarray(sorted(dataset.catalog.position(name) for name in query.relevant), dtype=np.int64)
        scope = Scope.of(shape.catalog, np.setdiff1d(everything, hidden, assume_unique=True))
        removed.append(_routed(shape, query.text, k, scope))
    generic = {language: [_routed(shape, text, k) for text in texts] for language, texts in (no_tool or {}).items()}
    native = [_routed(shape, query.text, k) for query in dataset.queries if query.routable and not query.relevant]
    default = router.default_threshold("")  # 0.1 or the no-tool floor, the higher; the floor within the ceiling
    rows = [_row(threshold, answerable, removed, generic, native, k) for threshold in sorted({*thresholds, default})]
    recalibration = router.calibration("").recalibration
    return {
        "dataset": dataset.name,
        "tools": len(dataset.catalog),
        "queries": len(answerable),
        "fed": len(learned),
        "no_tool_queries": len(native),
        "generic_no_tool": {language: len(texts) for language, texts in generic.items()},
        "left_out_too_long": sum(not query.routable for query in dataset.queries),
        "k": k,
        "default_min_confidence": default,
        "no_tool_floor": shape.no_tool_floor(),
        "rows": rows,
        "reliability": reliability(reported),
        "reliability_shape": reliability(answerable),
        "recalibration": {
            "points": [list(point) for point in recalibration.points],
            "requests": recalibration.requests,
            "ceiling": recalibration.ceiling,
        },
    }


def _routed(router: Router, text: str, k: int, scope: Scope | None = None) -> Routed:
    result = router.route(text, k, min_confidence=0.0, scope=scope)
    return [(match.name, match.confidence) for match in result.matches]


def _kept(routed: Routed, threshold: float) -> list[str]:
    keep, _ = abstention([confidence for _, confidence in routed], threshold)
    return [routed[i][0] for i in keep]


def _row(
    threshold: float,
    answerable: Sequence[tuple[Routed, tuple[str, ...]]],
    removed: Sequence[Routed],
    generic: dict[str, list[Routed]],
    native: Sequence[Routed],
    k: int,
) -> dict[str, Any]:
    lost = [
        recall_at(_kept(routed, threshold), relevant, k) - recall_at([n for n, _ in routed], relevant, k)
        for routed, relevant in answerable
    ]
    row: dict[str, Any] = {
        "min_confidence": threshold,
        "recall_change": float(np.mean(lost)) if lost else 0.0,
        "recall_change_interval": interval95(lost),
        "mean_tools": float(np.mean([len(_kept(routed, threshold)) for routed, _ in answerable]))
        if answerable
        else 0.0,
        "abstained_removed": _share(not _kept(routed, threshold) for routed in removed),
    }
    if native:  # the dataset's own requests labelled with no tool
        row["abstained_native"] = _share(not _kept(routed, threshold) for routed in native)
    for language, routed_all in generic.items():
        row.update(_abstaining(f"abstained_{language}", routed_all, threshold))
    everyone = [routed for routed_all in generic.values() for routed in routed_all]
    if everyone:
        row.update(_abstaining("abstained_generic", everyone, threshold))
        row["prefix_changed"] = _prefix_changed(everyone, answerable, threshold)
    return row


def _abstaining(key: str, routed_all: Sequence[Routed], threshold: float) -> dict[str, Any]:
    """The share of ``routed_all`` that abstains at ``threshold`` under ``key``, and its 95% interval."""
    hits = sum(not _kept(routed, threshold) for routed in routed_all)
    return {
        key: hits / len(routed_all) if routed_all else 0.0,
        f"{key}_interval": share_interval95(hits, len(routed_all)),
    }


def _prefix_changed(no_tool: Sequence[Routed], answerable: Sequence[tuple[Routed, Any]], threshold: float) -> float:
    """Share of no-tool turns that add a tool to a session whose previous turn was answerable."""
    pick = random.Random(0)
    changed = []
    for routed in no_tool:
        before, _ = answerable[pick.randrange(len(answerable))] if answerable else ([], ())
        had = set(_kept(before, threshold)) if before else set()
        changed.append(bool(set(_kept(routed, threshold)) - had))
    return _share(changed)


def reliability(answerable: Sequence[tuple[Routed, tuple[str, ...]]], bins: int = BINS) -> dict[str, Any]:
    """Mean confidence and share relevant per confidence bin, over the top-k matches; the expected
    calibration error with its 95% interval (``ece_interval``: requests resampled, ``ece_bootstrap``)."""
    pairs = [(confidence, name in relevant) for routed, relevant in answerable for name, confidence in routed]
    if not pairs:
        return {"matches": 0, "ece": 0.0, "ece_interval": [0.0, 0.0], "log_loss": 0.0, "bins": []}
    confidence = np.array([p for p, _ in pairs])
    relevant = np.array([float(r) for _, r in pairs])
    where = np.minimum((confidence * bins).astype(int), bins - 1)
    inside = [(b, where == b) for b in range(bins)]
    table = [
        {
            "from": b / bins,
            "to": (b + 1) / bins,
            "matches": int(mask.sum()),
            "confidence": float(confidence[mask].mean()),
            "relevant": float(relevant[mask].mean()),
        }
        for b, mask in inside
        if mask.any()
    ]
    request = np.repeat(np.arange(len(answerable)), [len(routed) for routed, _ in answerable])
    clipped = np.clip(confidence, 1e-4, 1 - 1e-4)
    log_loss = -float(np.mean(relevant * np.log(clipped) + (1 - relevant) * np.log(1 - clipped)))
    return {
        "matches": len(pairs),
        "ece": ece_of(confidence, relevant, bins),
        "ece_interval": ece_bootstrap(confidence, relevant, request, bins),
        "log_loss": log_loss,
        "bins": table,
    }


def ece_of(confidence: np.ndarray, relevant: np.ndarray, bins: int = BINS, weights: np.ndarray | None = None) -> float:
    """Expected calibration error: the gap between mean confidence and share relevant, per bin,
    weighted by the bin's share of the matches (each match counted ``weights`` times)."""
    counted = np.ones(len(confidence)) if weights is None else weights
    where = np.minimum((confidence * bins).astype(int), bins - 1)
    total = np.bincount(where, counted, bins)
    said = np.bincount(where, counted * confidence, bins)
    right = np.bincount(where, counted * relevant, bins)
    filled = total > 0
    return float(np.abs(said[filled] - right[filled]).sum() / total.sum())


def ece_bootstrap(
    confidence: np.ndarray, relevant: np.ndarray, request: np.ndarray, bins: int = BINS, rounds: int = 400
) -> list[float]:
    """The 2.5th and 97.5th percentiles of the expected calibration error over ``rounds`` seeded
    resamples of the requests (``request``: each match's request), their matches together."""
    requests = int(request.max()) + 1
    draws = np.random.default_rng(0).integers(0, requests, size=(rounds, requests))
    errors = [ece_of(confidence, relevant, bins, np.bincount(draw, minlength=requests)[request]) for draw in draws]
    return [float(np.percentile(errors, 2.5)), float(np.percentile(errors, 97.5))]


def _default_of(result: dict[str, Any]) -> float:
    """The threshold the router applies by default on the result's catalog."""
    return float(result.get("default_min_confidence", DEFAULT_MIN_CONFIDENCE))


def _share(flags: Any) -> float:
    values = list(flags)
    return float(np.mean(values)) if values else 0.0


def abstention_table(results: Sequence[dict[str, Any]]) -> str:
    """The sweep per dataset: one row per threshold, the default marked."""
    out = []
    for result in results:
        languages = list(result["generic_no_tool"])
        native = bool(result.get("no_tool_queries"))
        fed = f", {result['fed']} more learned as feedback first" if result.get("fed") else ""
        out.append(f"### {result['dataset']} ({result['tools']} tools, {result['queries']} answerable queries{fed})\n")
        head = ["min_confidence", "Recall@5 change", "tools sent", "abstain: relevant removed", "abstain: generic"]
        head += [f"abstain: {language}" for language in languages] + ["session prefix changed"]
        head += ["abstain: dataset's no-tool"] if native else []
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---:|" * len(head))
        for row in result["rows"]:
            mark = " (default)" if abs(row["min_confidence"] - _default_of(result)) < 1e-9 else ""
            cells = [
                f"{row['min_confidence']:g}{mark}",
                f"{row['recall_change']:+.3f} ± {row['recall_change_interval']:.3f}",
                f"{row['mean_tools']:.2f}",
                f"{row['abstained_removed']:.2f}",
                f"{row.get('abstained_generic', 0.0):.2f}",
            ]
            cells += [f"{row[f'abstained_{language}']:.2f}" for language in languages]
            cells.append(f"{row.get('prefix_changed', 0.0):.2f}")
            cells += [f"{row['abstained_native']:.2f}"] if native else []
            out.append("| " + " | ".join(cells) + " |")
        out.append(_default_shares(result, ["generic", *languages]))
        if "no_tool_floor" in result:
            ceiling = result.get("recalibration", {}).get("ceiling", 1.0)
            within = f", the floor no higher than the fed requests allow ({ceiling:g})" if ceiling < 1 else ""
            out.append(
                f"\nDefault threshold here {_default_of(result):g}: {DEFAULT_MIN_CONFIDENCE:g} or the catalog's "
                f"no-tool floor ({result['no_tool_floor']:g}), the higher{within}."
            )
        out.append(_reliability_line(result, "reliability", "confidence"))
        shape = _reliability_line(
            result, "reliability_shape", "shape's confidence (before the crowd's share and any recalibration)"
        )
        fit = result.get("recalibration", {})
        if fit.get("requests"):
            shape += (
                f"Recalibrated from {fit['requests']} labelled requests: isotonic, {len(fit.get('points', []))} "
                "steps.\n"
            )
        out.append(shape)
    legend = (
        "Recall@5 change: against no abstention on the same queries (95% interval, paired). Abstain: share of "
        "no-tool requests answered with no tools. The no-tool floor: the threshold under which "
        f"{FLOOR_SHARE:.0%} of the shipped no-tool requests (not the benchmark's) of every language stay on the "
        "catalog. Session prefix changed: share of generic no-tool turns that "
        "added a tool to the session. Reliability: mean confidence → share relevant, per confidence bin; the "
        "expected calibration error's 95% interval resamples the requests (400 seeded bootstrap rounds)."
    )
    return "\n".join(out) + "\n" + legend + "\n"


def _default_shares(result: dict[str, Any], groups: Sequence[str]) -> str:
    """The generic no-tool requests abstaining at the default threshold, each with its interval."""
    default = [row for row in result["rows"] if abs(row["min_confidence"] - _default_of(result)) < 1e-9]
    if not default or "abstained_generic_interval" not in default[0]:
        return ""  # a result written before the intervals were
    row, counts = default[0], dict(result["generic_no_tool"])
    cells = []
    for group in groups:
        low, high = row[f"abstained_{group}_interval"]
        count = sum(counts.values()) if group == "generic" else counts[group]
        cells.append(f"{group} {row[f'abstained_{group}']:.2f} ({low:.2f}-{high:.2f}, {count} requests)")
    return "\nGeneric no-tool requests abstaining at the default, with 95% intervals: " + "; ".join(cells) + "."


def _interval(table: dict[str, Any]) -> str:
    low, high = table.get("ece_interval") or (None, None)
    return "" if low is None else f" (95% interval {low:.3f}-{high:.3f})"


def _reliability_line(result: dict[str, Any], key: str, label: str) -> str:
    table = result[key]
    return (
        f"\nReliability of the top-{result['k']} matches' {label} ({table['matches']} matches, "
        f"expected calibration error {table['ece']:.3f}{_interval(table)}, log loss {table.get('log_loss', 0.0):.3f}): "
        + ", ".join(f"{b['confidence']:.2f}→{b['relevant']:.2f} (n={b['matches']})" for b in table["bins"])
        + "\n"
    )
