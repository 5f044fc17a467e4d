"""Cache stability over multi-turn sessions: how often the tools array keeps its prefix.

Sessions are built from a dataset's labelled queries, seeded: the first turn is a random query;
each later turn is, with probability ``follow_up``, another query needing one of the tools an
earlier turn needed (the user goes on with the same task), otherwise a random query (a new topic).

Each turn is routed once (Top-K, default settings); the methods differ only in what tools array
they send:

- ``top-k ranked``: this turn's K tools, best first (what a naive router sends);
- ``top-k canonical``: the same K tools in name order (toolsift without a session);
- ``sticky``: toolsift with ``session_id``: earlier tools keep their place, new ones appended,
  reset at the cap;
- ``sticky outranking``: the same with ``session_policy=outranking``: only new tools ranked above
  the session's best are appended.
- ``deferred``: deferred loading (``toolsift.router.deferred``): the tools array never changes
  (every tool deferred, only the search tool rendered); each turn the model calls the search tool
  and toolsift references this turn's tools that the conversation does not hold yet, whose
  definitions then expand inline. Recall is over the tools loaded so far in the session.

Figures per method, over turns 2..T (recall over all turns): ``prefix kept`` (the previous turn's
array is an exact prefix of this one), ``identical`` (same array), gold recall within the array
sent, tools and schema tokens sent per turn, ``tool tokens cached`` (share of the tools array
that matches the previous turn's from the start, token for token), and ``billed``: a modelled
prompt cost per turn. Providers cache the prompt in the order tools, system, messages, so when
the tools array differs only its common prefix with the previous turn is read from the cache,
and the system prompt and the conversation after it are processed again; when it is identical,
the whole previous prompt is a cache hit. The model: a system prompt of ``SYSTEM_TOKENS``, each
earlier turn adding ``TURN_TOKENS`` of messages, cache reads billed at ``CACHED_PRICE`` (Anthropic:
0.1) of the normal input price, cache writes at the normal price.

``deferred`` is billed for what it does: its prompt prefix never changes, so each request reads the
whole previous prompt from the cache, but every turn makes two requests, the model's search call
and, after toolsift's answer, the call that uses the tools. The first pays this turn's messages in
full; the second pays the search round trip (``SEARCH_ROUNDTRIP_TOKENS``) and each newly referenced
definition in full (once: later turns read it from the cache), plus a cached read of the rest.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import orjson

from toolsift.bench.datasets import Dataset, Query
from toolsift.catalog import Tool
from toolsift.errors import CatalogError
from toolsift.router import Router, SessionStore
from toolsift.router.deferred import search_tool
from toolsift.router.tokens import SchemaTokens

METHODS = ("top-k ranked", "top-k canonical", "sticky", "sticky outranking", "deferred")
SYSTEM_TOKENS = 1000
TURN_TOKENS = 300
CACHED_PRICE = 0.1
SEARCH_ROUNDTRIP_TOKENS = 60
"""The model's search call (its query) and the tool_result around the references, per turn."""


@dataclass(frozen=True)
class SessionPlan:
    sessions: int = 200
    turns: int = 8
    k: int = 5
    follow_up: float = 0.6
    cap: int = 64
    seed: int = 0


def build_sessions(queries: Sequence[Query], plan: SessionPlan) -> list[list[Query]]:
    rng = random.Random(plan.seed)
    by_tool: dict[str, list[int]] = {}
    for position, query in enumerate(queries):
        for name in query.relevant:
            by_tool.setdefault(name, []).append(position)
    sessions = []
    for _ in range(plan.sessions):
        chosen = [rng.randrange(len(queries))]
        while len(chosen) < plan.turns:
            if rng.random() < plan.follow_up:
                anchor = queries[rng.choice(chosen)]
                candidates = [i for i in by_tool.get(rng.choice(anchor.relevant), []) if i not in chosen]
                if candidates:
                    chosen.append(rng.choice(candidates))
                    continue
            chosen.append(rng.randrange(len(queries)))
        sessions.append([queries[i] for i in chosen])
    return sessions


def run_sessions(dataset: Dataset, router: Router, plan: SessionPlan, tokens: SchemaTokens) -> dict[str, Any]:
    """The figures of every method on one dataset (a JSON-ready dict)."""
    # Sessions model users going on with a task: built from the queries some tool answers, and that
    # the router accepts (labelled no-tool queries and ones over the length limit are left out).
    usable = [query for query in dataset.with_tools if query.routable]
    if not usable:
        raise CatalogError(
            "has no query with a relevant tool (within the router's length limit) to build sessions from",
            source=dataset.name,
            fix="Sessions need labelled queries: give some queries a 'relevant' tool",
        )
    sessions = build_sessions(usable, plan)
    texts = list(dict.fromkeys(query.text for session in sessions for query in session))
    routed = dict(
        zip(texts, router.route_many(texts, plan.k, min_confidence=0.0), strict=True)
    )  # the policies, on ranking
    store = SessionStore(cap=plan.cap, max_sessions=plan.sessions + 1)
    lazy = SessionStore(cap=plan.cap, max_sessions=plan.sessions + 1)
    turns: dict[str, list[dict[str, float]]] = {method: [] for method in METHODS}
    search_tokens = tokens.count(orjson.dumps(search_tool("anthropic")).decode())
    for number, session in enumerate(sessions):
        previous: dict[str, list[str]] = {}
        deferred = DeferredSession(search_tokens)
        for turn, query in enumerate(session):
            result = routed[query.text]
            turns["deferred"].append(deferred.turn(turn, result.names, set(query.relevant), tokens))
            arrays: dict[str, list[str]] = {
                "top-k ranked": result.names,
                "top-k canonical": [tool.name for tool in result.tools],
                "sticky": _names(store.advance(f"s{number}", result.tools, router.catalog).tools),
                "sticky outranking": _names(
                    lazy.advance(
                        f"s{number}", result.tools, router.catalog, ranked=result.names, policy="outranking"
                    ).tools
                ),
            }
            for method, names in arrays.items():  # the methods that send a tools array
                before = previous.get(method)
                gold = set(query.relevant)
                row = {"recall": len(gold & set(names)) / len(gold)}
                if before is not None:
                    sent = tokens.subset(names)
                    common = tokens.subset(_common_prefix(before, names))
                    row.update(
                        tools=float(len(names)),
                        tokens=float(sent),
                        prefix_kept=float(names[: len(before)] == before),
                        identical=float(names == before),
                        tool_tokens_cached=common / sent if sent else 1.0,
                        billed=billed_tokens(sent, common, names == before, turn),
                    )
                turns[method].append(row)
                previous[method] = names
    figures = {}
    for method, rows in turns.items():
        later = [row for row in rows if "prefix_kept" in row]
        figures[method] = {
            "prefix_kept": fmean(row["prefix_kept"] for row in later),
            "identical": fmean(row["identical"] for row in later),
            "recall": fmean(row["recall"] for row in rows),
            "tools_per_turn": fmean(row["tools"] for row in later),
            "tokens_per_turn": fmean(row["tokens"] for row in later),
            "tool_tokens_cached": fmean(row["tool_tokens_cached"] for row in later),
            "billed_per_turn": fmean(row["billed"] for row in later),
        }
    return {
        "dataset": dataset.name,
        "tools": len(dataset.catalog),
        "sessions": plan.sessions,
        "turns": plan.turns,
        "k": plan.k,
        "cap": plan.cap,
        "follow_up": plan.follow_up,
        "queries_used": len(usable),
        "cost_model": {
            "system_tokens": SYSTEM_TOKENS,
            "turn_tokens": TURN_TOKENS,
            "cached_price": CACHED_PRICE,
            "search_roundtrip_tokens": SEARCH_ROUNDTRIP_TOKENS,
        },
        "methods": figures,
    }


def sessions_table(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| dataset | method | prefix kept | identical | recall in sent | tools/turn | tool tokens/turn "
        "| tool tokens cached | billed/turn |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        for method, figures in result["methods"].items():
            lines.append(
                f"| {result['dataset']} | {method} | {figures['prefix_kept']:.1%} | {figures['identical']:.1%} | "
                f"{figures['recall']:.3f} | {figures['tools_per_turn']:.1f} | {figures['tokens_per_turn']:.0f} | "
                f"{figures['tool_tokens_cached']:.1%} | {figures['billed_per_turn']:.0f} |"
            )
    return "\n".join(lines) + "\n"


class DeferredSession:
    """One session under deferred loading: what is loaded, and the prompt so far (in tokens)."""

    def __init__(self, search_tokens: int) -> None:
        self.search_tokens = search_tokens
        self.loaded: set[str] = set()
        self.prompt = float(search_tokens + SYSTEM_TOKENS)  # the previous request's whole prompt

    def turn(self, turn: int, selected: Sequence[str], gold: set[str], tokens: SchemaTokens) -> dict[str, float]:
        new = [name for name in selected if name not in self.loaded]
        self.loaded |= set(new)
        loaded_tokens = tokens.subset(new)
        asking = self.prompt + TURN_TOKENS  # this turn's messages after the cached previous prompt
        answering = asking + SEARCH_ROUNDTRIP_TOKENS + loaded_tokens
        billed = (TURN_TOKENS + CACHED_PRICE * self.prompt) + (
            SEARCH_ROUNDTRIP_TOKENS + loaded_tokens + CACHED_PRICE * asking
        )
        self.prompt = answering
        row = {"recall": len(gold & self.loaded) / len(gold)}
        if turn > 0:
            row.update(
                tools=float(len(new)),
                tokens=float(self.search_tokens + loaded_tokens),
                prefix_kept=1.0,
                identical=1.0,
                tool_tokens_cached=1.0,
                billed=billed,
            )
        return row


def billed_tokens(sent: int, common: int, identical: bool, turn: int) -> float:
    """Modelled input cost of turn ``turn`` (0-based, > 0) in full-price tokens: ``sent`` tool
    tokens of which the first ``common`` match the previous prompt. The previous prompt's system
    and messages are only a cache hit when the tools array is identical."""
    prompt = sent + SYSTEM_TOKENS + TURN_TOKENS * turn
    cached = common + (SYSTEM_TOKENS + TURN_TOKENS * (turn - 1) if identical else 0)
    return (prompt - cached) + CACHED_PRICE * cached


def _common_prefix(before: list[str], after: list[str]) -> list[str]:
    shared = []
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        shared.append(new)
    return shared


def _names(tools: Sequence[Tool]) -> list[str]:
    return [tool.name for tool in tools]
