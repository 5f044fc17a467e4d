"""The lexical cap: Recall@5 with the standardised BM25 part capped at several values, same queries.

    python benchmarks/experiments/lexical_cap.py metatool functionchat_ko apibench sealtools

Each dataset's queries (a seeded 1,500 at most) routed with ``min_confidence`` 0 and each
``lexical_cap``; the difference to no cap is paired, with its 95% interval. Figures and the choice:
benchmarks/DECISIONS.md ("The lexical cap").
"""

import sys

import numpy as np

from toolsift.bench.cli import router_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.metrics import interval95, recall_at
from toolsift.router import RankingConfig, Router
from toolsift.settings import Settings

root = "../shared/datasets/"
caps = [float("inf"), 16.0, 12.0, 8.0, 6.0, 4.0]
for name in sys.argv[1:]:
    ds = load_dataset(root + name + "/tools.jsonl", root + name + "/queries.jsonl", name).sample(1500)
    base = router_for(ds.catalog, Settings())
    qs = [q for q in ds.queries if q.routable and q.relevant]
    base.embed_queries([q.text for q in qs])
    per = {}
    for c in caps:
        r = Router(base.index, base.embedder, RankingConfig(lexical_cap=c, min_confidence=0))
        r.query_cache = base.query_cache
        per[c] = np.array([recall_at(r.route(q.text, 5).names, q.relevant, 5) for q in qs])
    b = per[caps[0]]
    print(
        name,
        len(ds.catalog),
        len(qs),
        " ".join(
            f"cap{c:g}: {per[c].mean():.3f} ({(per[c] - b).mean():+.3f}±{interval95(list(per[c] - b)):.3f})"
            for c in caps
        ),
        flush=True,
    )
