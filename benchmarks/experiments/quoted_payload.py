"""Requests that quote what a tool should act on: rank them with the quoted text left out?

    python benchmarks/experiments/quoted_payload.py LIMIT DATASET...
    python benchmarks/experiments/quoted_payload.py payload

For each dataset's requests (a seeded LIMIT) that quote something ("...", “...”, «...», 「...」,
'...': ``toolsift.text.quoted_spans``), Recall@5 of the request as written against rewrites of
it, paired: the quotes emptied (``""``), the quoted text replaced by the word ``text``, the
quotes dropped, and the quotes emptied only where three words or more stand around them
("emptied, 3 words": 'draw "a cat on a bicycle"' keeps its quote); the last also at the default
threshold (the tool found and the request not abstaining). A request all in quotes is routed as
written. ``payload``: the same on ``payload_requests.tsv`` (64 requests written for the bundled
catalog that carry a message, a text or code in quotes), with both shipped models. Figures:
benchmarks/DECISIONS.md ("Confidence and abstention"). Since 257af60 the router itself ranks every
request as ``without_payload`` leaves it, so "as written" is already that: the figures came from
the checkout before it (``PYTHONPATH``).
"""

import re
import sys
from pathlib import Path

import numpy as np

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.metrics import interval95, recall_at
from toolsift.catalog import load_catalog
from toolsift.embeddings import get_embedder
from toolsift.router import Router
from toolsift.settings import BUNDLED_CATALOG, Settings
from toolsift.text import outside_quotes, quoted_spans, without_payload

ROOT = "../shared/datasets"
PAYLOAD = Path(__file__).parents[1] / "abstention" / "payload_requests.tsv"


def rewrite(text: str, stand_in: str | None) -> str:
    """``text`` with each quoted span replaced by ``stand_in`` (None: the marks kept, emptied), or
    as it is when no word stands outside the quotes."""
    spans = quoted_spans(text)
    between = outside_quotes(text, spans)
    if not spans or not re.search(r"[^\W\d_]", " ".join(between)):
        return text
    marks = [(text[start] + text[end - 1]) if stand_in is None else stand_in for start, end in spans] + [""]
    return re.sub(r"\s+", " ", "".join(piece + mark for piece, mark in zip(between, marks, strict=True))).strip()


REWRITES = {
    "emptied": lambda text: rewrite(text, None),
    "text": lambda text: rewrite(text, '"text"'),
    "dropped": lambda text: rewrite(text, ""),
    "emptied, 3 words": without_payload,  # what the router does since 257af60
}


def compare(label: str, router: Router, asked: list[tuple[str, tuple[str, ...]]]) -> None:
    def recalls(change, threshold: float | None = 0.0) -> np.ndarray:
        return np.array([recall_at(router.route(change(text), 5, min_confidence=threshold).names, relevant, 5)
                         for text, relevant in asked])  # fmt: skip

    written = recalls(lambda text: text)
    line = f"{label}: {len(asked)} quoting, as written {written.mean():.3f}"
    for name, change in REWRITES.items():
        difference = recalls(change) - written
        line += f" | {name} {difference.mean():+.3f} ± {interval95(difference.tolist()):.3f}"
    served, rewritten = recalls(lambda text: text, None), recalls(REWRITES["emptied, 3 words"], None)
    line += f" | at the default threshold {served.mean():.3f} -> {rewritten.mean():.3f}"
    line += f" ({(rewritten - served).mean():+.3f} ± {interval95((rewritten - served).tolist()):.3f})"
    print(line, flush=True)


def main(*arguments: str) -> None:
    if arguments[0] == "payload":
        rows = [line.split("\t") for line in PAYLOAD.read_text(encoding="utf-8").splitlines() if line[:1] != "#"]
        for model in ("all-MiniLM-L6-v2", "multilingual-e5-small"):
            router = Router.build(load_catalog(BUNDLED_CATALOG), get_embedder(model), cache=Settings().open_cache())
            compare(f"payload, {model}", router, [(text, (tool,)) for text, tool in rows])
        return
    limit, *names = arguments
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        asked = [(q.text, q.relevant) for q in dataset.queries if q.routable and q.relevant and quoted_spans(q.text)]
        compare(name, router, asked)


if __name__ == "__main__":
    main(*sys.argv[1:])
