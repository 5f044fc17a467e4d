"""Several fits of the confidence's shape, each on the same requests of each dataset.

    python benchmarks/experiments/shape_candidates.py LIMITS SHAPE... -- DATASET...

LIMITS: requests per dataset ("3000" or "metatool=3000,sealtools=600,..."; others all). Each
SHAPE is ``name:intercept,above,below_best,coverage`` (``shipped`` for the one in
``confidence.SHAPE``). Per dataset and shape: the abstention bench (``run_abstention``) on a fine
sweep of thresholds, printed at 0.08-0.13 and at the catalog's default (0.1 or its no-tool
floor): Recall@5 change with its interval, generic no-tool requests abstaining per language, and
the expected calibration error of the reported confidence; then per language the most abstaining
within 0.01 of Recall@5 (the point estimate). Figures: benchmarks/DECISIONS.md ("Confidence and
abstention").
"""

import sys

import numpy as np

from toolsift.bench.abstention import generic_no_tool, run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import confidence
from toolsift.router import router as router_module
from toolsift.router.confidence import Calibration, Shape
from toolsift.router.router import Router
from toolsift.settings import Settings

ROOT = "../shared/datasets"
THRESHOLDS = [round(t, 3) for t in np.arange(0.02, 0.301, 0.01)]
SHOWN = (0.08, 0.09, 0.1, 0.11, 0.12, 0.13)


def use(shape: Shape) -> None:
    """Make ``shape`` the one every calibration is fitted with from now on."""
    confidence.SHAPE = router_module.SHAPE = shape
    Calibration.fit.__func__.__defaults__ = (shape,)  # type: ignore[attr-defined]


def parsed(spec: str, shipped: Shape) -> tuple[str, Shape]:
    name, _, numbers = spec.partition(":")
    if not numbers:
        return name, shipped
    intercept, above, below, coverage = (float(x) for x in numbers.split(","))
    return name, Shape(intercept=intercept, above=above, below_best=below, coverage=coverage)


def line(row: dict, languages: list[str]) -> str:
    shares = " ".join(f"{language} {row[f'abstained_{language}']:.2f}" for language in languages)
    return f"{row['recall_change']:+.4f} ± {row['recall_change_interval']:.4f}  {shares}"


def main(limits: str, *rest: str) -> None:
    cut = rest.index("--")
    shipped = confidence.SHAPE
    shapes = [parsed(spec, shipped) for spec in rest[:cut]]
    per = dict(item.split("=") for item in limits.split(",")) if "=" in limits else {}
    no_tool = generic_no_tool()
    for name in rest[cut + 1 :]:
        limit = int(per.get(name, limits if not per else 10**9))
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(limit)
        for label, shape in shapes:
            use(shape)
            router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
            result = run_abstention(dataset, router, 5, THRESHOLDS, no_tool=no_tool)
            languages = list(result["generic_no_tool"])
            print(f"{name} {label} ({result['queries']} requests): ECE {result['reliability']['ece']:.3f}", flush=True)
            for row in result["rows"]:
                default = abs(row["min_confidence"] - result["default_min_confidence"]) < 1e-9
                if default or row["min_confidence"] in SHOWN:
                    mark = " (default)" if default else ""
                    print(f"  {row['min_confidence']:.4f}{mark}: {line(row, languages)}", flush=True)
            within = [row for row in result["rows"] if row["recall_change"] >= -0.01]
            best = {
                language: max(within, key=lambda row, lang=language: (row[f"abstained_{lang}"], -row["min_confidence"]))
                for language in languages
            }
            print("  most within 0.01: " + " ".join(
                f"{lang} {row[f'abstained_{lang}']:.2f}@{row['min_confidence']:g}" for lang, row in best.items()
            ), flush=True)  # fmt: skip
    use(shipped)


if __name__ == "__main__":
    main(*sys.argv[1:])
