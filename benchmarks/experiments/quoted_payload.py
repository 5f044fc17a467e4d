"""Requests that quote what a tool should act on: rank them with the quoted text left out?

    python benchmarks/experiments/quoted_payload.py LIMIT DATASET...

For each dataset's requests (a seeded LIMIT) that quote something ("...", “...”, «...», 「...」,
'...'), Recall@5 of the request as written against three rewrites of it, paired: the quotes
emptied (``""``), the quoted text replaced by the word ``text``, the quotes dropped. A request that
is all quotes is routed as written. Figures: benchmarks/DECISIONS.md ("Confidence and abstention").
"""

import re
import sys

import numpy as np

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.metrics import interval95, recall_at
from toolsift.router import Router
from toolsift.settings import Settings

ROOT = "../shared/datasets"
QUOTED = re.compile(r'"[^"]+"|“[^”]+”|«[^»]+»|「[^」]+」|『[^』]+』|(?<!\w)\'[^\']+\'(?!\w)')
REWRITES = {
    "emptied": lambda text: QUOTED.sub('""', text),
    "text": lambda text: QUOTED.sub('"text"', text),
    "dropped": lambda text: re.sub(r"\s+", " ", QUOTED.sub("", text)).strip(),
}


def rewritten(rewrite, text: str) -> str:
    return rewrite(text) if re.search(r"\w", QUOTED.sub("", text)) else text


def main(limit: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        quoting = [q for q in dataset.queries if q.routable and q.relevant and QUOTED.search(q.text)]

        def recalls(rewrite, quoting=quoting, router=router):
            texts = [rewritten(rewrite, q.text) for q in quoting]
            return np.array([recall_at(router.route(t, 5, min_confidence=0.0).names, q.relevant, 5)
                             for t, q in zip(texts, quoting, strict=True)])  # fmt: skip

        written = recalls(lambda text: text)
        line = f"{name}: {len(quoting)} quoting, as written {written.mean():.3f}"
        for label, rewrite in REWRITES.items():
            change = recalls(rewrite) - written
            line += f" | {label} {change.mean():+.3f} ± {interval95(change.tolist()):.3f}"
        print(line, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
