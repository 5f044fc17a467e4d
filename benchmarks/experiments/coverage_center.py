"""Coverage measured from where the catalog puts requests no tool serves (tried; see DECISIONS).

    python benchmarks/experiments/coverage_center.py QUANTILE LIMIT DATASET...

The confidence's ``coverage`` feature (BM25 over its ceiling) is 0 to 1 at any catalog size, but
how much of an *unrelated* request some tool covers grows with the catalog: one word of "what is
love?" is in some tool's text among 4,000. Here each match's coverage is lowered by how much more
the catalog covers the shipped no-tool requests than the bundled catalog (which the shape was
fitted on) does: the QUANTILE of each no-tool request's best coverage over the catalog's tools,
minus the same on the bundled catalog (QUANTILE 0: the router as it is). Then the abstention
bench (``run_abstention``, a seeded LIMIT of each dataset's requests) on the same requests.
"""

import sys

import numpy as np

from toolsift.bench.abstention import abstention_table, generic_no_tool, run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.catalog import load_catalog
from toolsift.router import Router, confidence
from toolsift.router.confidence import no_tool_requests
from toolsift.settings import BUNDLED_CATALOG, Settings

ROOT = "../shared/datasets"


def coverage_center(router: Router, quantile: float) -> float:
    """The QUANTILE of the no-tool requests' best coverage among the catalog's tools."""
    best = []
    for text in no_tool_requests():
        ceiling = router.lexical.ceiling(text)
        best.append(float(router.lexical.scores(text).max()) / ceiling if ceiling > 0 else 0.0)
    return float(np.quantile(best, quantile))


def main(quantile: str, limit: str, *names: str) -> None:
    q, shift = float(quantile), {"value": 0.0}
    plain = confidence.Calibration.features

    def features(self, evidence, none, coverage, leading=0):  # type: ignore[no-untyped-def]
        return plain(self, evidence, none, np.asarray(coverage, dtype=np.float64) - shift["value"], leading)

    confidence.Calibration.features = features  # type: ignore[method-assign]
    bundled = load_catalog(BUNDLED_CATALOG)
    base = Router.build(bundled, embedder_for("auto", bundled), cache=Settings().open_cache())
    reference = coverage_center(base, q) if q > 0 else 0.0
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        shift["value"] = coverage_center(router, q) - reference if q > 0 else 0.0
        result = run_abstention(dataset, router, 5, no_tool=generic_no_tool())
        print(f"== {name}: quantile {q}, bundled {reference:.3f}, shift {shift['value']:+.3f}", flush=True)
        print(abstention_table([result]), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
