"""What tuning learns from: (request, tool) pairs a catalog and its users vouch for.

Two sources: the catalog's own ``examples`` (a curator wrote them), and the feedback the router
already ranks with (``UsageBook.examples``: trusted contributors' requests, and untrusted ones'
only once a quorum agree). Raw feedback that does not rank is never trained on: a model is harder
to take back than a feedback record. A request answered by two tools is two pairs, held
back or kept together (``hold_out``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from toolsift.catalog import Catalog
from toolsift.router import within_query_limit
from toolsift.router.usage import UsageBook
from toolsift.text import without_payload

Source = Literal["example", "feedback"]


@dataclass(frozen=True)
class Pair:
    """``query`` was answered by ``tool`` (a catalog name)."""

    query: str
    tool: str
    source: Source = "feedback"


def collect(catalog: Catalog, book: UsageBook | None = None, pool: str = "") -> list[Pair]:
    """The catalog's examples, then ``pool``'s ranking feedback, for tools the catalog holds;
    each (request, tool) once. ``pool`` ``""``: the service's own feedback (without tenants, or
    the operator's); a tenant's requests stay out of a model every tenant is served by. Each
    request as the router ranks it: what it quotes left out (``text.without_payload``)."""
    pairs = [Pair(without_payload(text), tool.name, "example") for tool in catalog for text in tool.examples]
    if book is not None:
        found = book.examples(pool)
        pairs += [Pair(without_payload(text), tool, "feedback") for tool, text in found if tool in catalog]
    seen: set[tuple[str, str]] = set()
    kept = []
    for pair in pairs:
        key = (pair.query.strip().casefold(), pair.tool)
        if key not in seen and within_query_limit(pair.query):
            seen.add(key)
            kept.append(pair)
    return kept


def hold_out(pairs: Sequence[Pair], fraction: float, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """(train, held): a seeded ``fraction`` of the tools is held back with every request that
    named one of them; a request naming held and kept tools is held back for its held tools only
    (its kept ones are neither trained on nor judged). The check then measures what tuning is
    for: requests for tools the training never saw (a kept tool's requests are served by its
    feedback views already) — on a catalog whose requests ask for several tools at once, many
    more than the requests naming held tools alone (Seal-Tools: 285 instead of 35: benchmarks/DECISIONS.md).
    At least one tool is held back when there are two."""
    tools = sorted({pair.tool for pair in pairs})
    random.Random(seed).shuffle(tools)
    count = min(len(tools) - 1, max(1, round(fraction * len(tools)))) if len(tools) > 1 else 0
    held_tools = set(tools[:count])
    answered = by_request(pairs)
    held = {query for query, named in answered.items() if named & held_tools}
    return [p for p in pairs if p.query not in held], [p for p in pairs if p.query in held and p.tool in held_tools]


def by_request(pairs: Sequence[Pair]) -> dict[str, set[str]]:
    """request text -> the tools that answered it."""
    grouped: dict[str, set[str]] = {}
    for pair in pairs:
        grouped.setdefault(pair.query, set()).add(pair.tool)
    return grouped
