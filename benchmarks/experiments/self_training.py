"""Learning from requests no one labelled: the router's own sure answers as training pairs.

    python benchmarks/experiments/self_training.py metatool 0.5

Tool split at F = 0.5 as ``tuning_epochs.py`` (a seeded 6,000 queries at most, at most 3,000 fed
pairs). The scored requests (tools no one asked for) are halved, seeded: the first half stands for
traffic the service routed without feedback, the second is scored. Each traffic request whose best
match the base router gives a confidence of at least THRESHOLD becomes a pair (request, that
tool) — right or wrong, as a deployment would have it. The whole encoder is tuned on the fed pairs
alone and on the fed and those pairs; Recall@5 of the second half paired against the base model.
Figures: benchmarks/DECISIONS.md ("Fine-tuning").
"""

import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from toolsift.bench.feedback import _paired, _recalls
from toolsift.embeddings.query_cache import CachingEmbedder
from toolsift.router import Router
from toolsift.tuning import models
from toolsift.tuning.pairs import Pair
from toolsift.tuning.trainer import Recipe

sys.path.insert(0, str(Path(__file__).parent))
from query_tower import tool_split  # noqa: E402


def main(name: str, threshold: str) -> None:
    dataset, embedder, base, pairs, scored = tool_split(name)
    order = list(scored)
    random.Random(1).shuffle(order)
    traffic, judged = order[: len(order) // 2], order[len(order) // 2 :]
    routed = base.route_many([q.text for q in traffic], 1, usage_pool=None, min_confidence=0.0)
    sure = [
        (q, r.matches[0])
        for q, r in zip(traffic, routed, strict=True)
        if r.matches and r.matches[0].confidence >= float(threshold)
    ]
    pseudo = [Pair(q.text, match.name) for q, match in sure]
    right = np.mean([match.name in q.relevant for q, match in sure]) if sure else 0.0
    before = _recalls(base, None, judged, [5])[5]
    print(f"{name}: {len(pairs)} fed pairs, {len(traffic)} traffic, {len(pseudo)} sure (right {right:.3f}), "
          f"{len(judged)} scored, base R@5 {np.mean(before):.4f}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as workdir:
        for label, train in (("fed", pairs), ("fed+traffic", pairs + pseudo)):
            started = time.time()
            model, stats = models.make_full(
                base, train, Recipe(), Path(workdir), None, deadline=time.monotonic() + 1800
            )
            tuned = Router.build(dataset.catalog, CachingEmbedder(models.load(model, Path(workdir))))
            after = _recalls(tuned, None, judged, [5])[5]
            print(f"== {label}: {len(train)} pairs, R@5 {np.mean(after):.4f}, vs base {_paired(after, before)}, "
                  f"{time.time() - started:.0f}s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
