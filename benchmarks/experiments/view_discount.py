"""How far a view's cosine is discounted (``toolsift.router.usage.VIEW_DISCOUNT``): the real
router, feedback at F = 0.5, split by query (tools with feedback) and by tool (requests for
tools nobody asked for yet), every discount on the same scored requests.

    python benchmarks/experiments/view_discount.py apibench metatool sealtools functionchat_ko

Recall@5 of ``toolsift`` (no feedback) and of ``toolsift+feedback`` at each discount, with the
paired difference to discount 0 (views at their cosine). Figures: benchmarks/DECISIONS.md.
"""

import random
import sys

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.feedback import _recalls, feedback_of, split
from toolsift.bench.metrics import interval95
from toolsift.bench.tuning import split_by_tool
from toolsift.router import Router, usage
from toolsift.settings import Settings

ROOT = "../shared/datasets"
DISCOUNTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def main(*names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl")
        base = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        for how in ("query", "tool"):
            if how == "tool":
                fed, scored = split_by_tool(dataset.with_tools, dataset.catalog.names, 0.5, 0)
            else:
                fed, scored = split(dataset.with_tools, 0.5, 0)
            scored = random.Random(0).sample(scored, 3000) if len(scored) > 3000 else scored
            rows = {"toolsift": _recalls(base, None, scored, [5])[5]}
            for discount in DISCOUNTS:
                usage.VIEW_DISCOUNT = discount
                learner = Router(base.index, base.embedder, base.ranking)
                learner.learn(feedback_of(fed))
                rows[f"feedback {discount}"] = _recalls(learner, "", scored, [5])[5]
            print(f"== {name} split by {how}: {len(fed)} fed, {len(scored)} scored", flush=True)
            for label, values in rows.items():
                gap = [a - b for a, b in zip(values, rows["feedback 0.0"], strict=True)] if "feedback" in label else []
                versus = f"  {sum(gap) / len(gap):+.3f} ± {interval95(gap):.3f} vs 0" if gap else ""
                print(
                    f"  {label:14s} R@5 {sum(values) / len(values):.3f} ± {interval95(values):.3f}{versus}", flush=True
                )


if __name__ == "__main__":
    main(*sys.argv[1:])
