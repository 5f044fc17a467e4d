"""Catalog lint: what makes tools hard to route or costly to send, each with a concrete fix.

Static checks read the catalog alone (the ``security-*`` ones, for poisoned definitions, live in
``security.py``); ``confusable-pair`` needs the router's vectors; with a
labelled query set (the benchmark format) ``confused-by-queries``, ``never-retrieved`` and per-tool
accuracy come from routing every query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import orjson

from toolsift.catalog import Catalog, Tool
from toolsift.catalog.names import PROVIDER_NAME_RULE, VERBS, fits_providers, wire_name
from toolsift.catalog.security import scan_catalog
from toolsift.embeddings import DEFAULT_MODEL, split_identifier
from toolsift.embeddings.registry import NON_LATIN_SHARE, non_latin_share
from toolsift.errors import ToolsiftError
from toolsift.router import Router, Scope, format_tool
from toolsift.wire import SEVERITIES as SEVERITIES
from toolsift.wire import Severity as Severity

MIN_DESCRIPTION_WORDS = 6
MAX_REQUIRED = 5
MAX_SCHEMA_TOKENS = 600
CONFUSABLE_CLOSENESS = 0.8
"""A pair is confusable when its cosine closes this share of the gap between the catalog's mean
pair cosine and 1: ``(cos - mean) / (1 - mean) >= 0.8``. Models differ in their cosine scale
(multilingual-e5-small puts unrelated texts near 0.87, all-MiniLM-L6-v2 near 0.17), so a fixed
cosine flags most pairs of one and none of another (figures: benchmarks/DECISIONS.md)."""
MIN_CONFUSIONS = 3  # and at least 10% of the tool's queries
MAX_CONFUSION_FINDINGS = 100
ENGLISH_ONLY_MODELS = frozenset({DEFAULT_MODEL})
"""Models that read English only: on a catalog written in another script their vectors carry
little, and the lexical side has to carry the ranking."""

# Verbs tool names commonly start with; a name whose first word is none of these is flagged (info).
_GUIDANCE = re.compile(r"\b(use|used|when|instead|only|if|for|whenever|prefer|rather|unless)\b", re.IGNORECASE)
_ENUM_HINT = re.compile(
    r"\b(one of|either|must be|can be|allowed values?|possible values?|valid values?|options?)\b"
    r"|(['\"`][\w-]+['\"`]\s*(,|\bor\b|/|\|)\s*){1,}['\"`][\w-]+['\"`]"
    r"|\b\w+\s*\|\s*\w+\s*\|\s*\w+\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    tools: tuple[str, ...]
    message: str
    suggestion: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class LintReport:
    catalog: str
    tools: int
    findings: list[Finding]
    schema_tokens: dict[str, int]
    per_tool_accuracy: dict[str, dict[str, float]] | None = None

    def counts(self) -> dict[str, int]:
        return {severity: sum(f.severity == severity for f in self.findings) for severity in SEVERITIES}

    def fails(self, fail_on: Severity = "error") -> bool:
        worst = SEVERITIES.index(fail_on)
        return any(SEVERITIES.index(f.severity) <= worst for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "catalog": self.catalog,
            "tools": self.tools,
            "counts": self.counts(),
            "findings": [asdict(finding) for finding in self.findings],
            "schema_tokens": self.schema_tokens,
            "per_tool_accuracy": self.per_tool_accuracy,
        }


# -- static checks --------------------------------------------------------------------------


def check_names(catalog: Catalog) -> Iterable[Finding]:
    seen: dict[str, str] = {}
    for tool in catalog:
        key = split_identifier(tool.name)
        if key in seen:
            yield Finding(
                "colliding-names",
                "warning",
                (seen[key], tool.name),
                f"'{seen[key]}' and '{tool.name}' differ only in case or separators",
                "Keep one of them, or rename one so the names say how they differ",
            )
        else:
            seen[key] = tool.name
        if not fits_providers(tool.name):
            yield Finding(
                "name-renamed-for-providers",
                "warning",
                (tool.name,),
                f"'{tool.name}' does not match {PROVIDER_NAME_RULE} (OpenAI, Anthropic, MCP clients): it is sent "
                f"as '{wire_name(tool.name)}', and callers must map the name back (the response's names)",
                f"Rename it to letters, digits, '_' and '-', at most 64 characters, e.g. '{_suggested_name(tool.name)}'",
            )
        if not wire_name(tool.name)[0].isalpha() and not wire_name(tool.name).startswith("_"):
            yield Finding(
                "name-refused-by-gemini",
                "warning",
                (tool.name,),
                f"'{tool.name}' is sent as '{wire_name(tool.name)}', which does not start with a letter or '_': Gemini "
                "refuses such a function name",
                "Start the name with a letter (e.g. a verb: render_3d_model rather than 3d_render)",
            )
        words = key.split()
        if len(words) < 2 or not VERBS & set(words):  # a vendor prefix (stripe_create_refund) is fine
            yield Finding(
                "name-not-verb-noun",
                "info",
                (tool.name,),
                f"'{tool.name}' names no action (no verb such as get, create, search in it)",
                "Name it for what it does and to what, verb and object (as in search_orders); keep any prefix "
                "that says whose it is",
            )


def _suggested_name(name: str) -> str:
    """``wire_name`` without its hash: what a person would rename the tool to."""
    return "_".join(split_identifier(wire_name(name)).split()[:-1])[:64] or "tool_name"


def check_descriptions(catalog: Catalog) -> Iterable[Finding]:
    for tool in catalog:
        text = tool.description.strip()
        if not text:
            yield Finding(
                "empty-description",
                "error",
                (tool.name,),
                f"'{tool.name}' has no description",
                "Describe what the tool does, what it returns, and when to use it: the router and the "
                "model only see the name and this text",
            )
            continue
        if len(text.split()) < MIN_DESCRIPTION_WORDS:
            yield Finding(
                "short-description",
                "warning",
                (tool.name,),
                f"'{tool.name}' is described in {len(text.split())} words: '{text}'",
                "Say what it does, on what, what it returns and when to use it (one or two sentences)",
            )
        if not _GUIDANCE.search(text):
            yield Finding(
                "no-usage-guidance",
                "info",
                (tool.name,),
                f"the description of '{tool.name}' never says when to use it",
                "Add a clause such as 'Use when ...' or 'For X, use other_tool instead'",
            )


EXAMPLES_LISTED = 50
MAX_GROUP_TOOLS = 20
"""A group is the unit OpenAI's tool search loads whole (a namespace) and the unit group-first
ranking picks: past this size it loads as many schemas as deferred loading set out to avoid and
stops telling jobs apart. OpenAI suggests under 10 functions per namespace; 20 leaves room for a
typical MCP server (one service, one job) before the note."""


def check_groups(catalog: Catalog) -> Iterable[Finding]:
    """Groups too large to serve their purpose, described groups no tool is in, and groups
    without a description (their namespace then names their first tools)."""
    groups = catalog.groups()
    for name, members in groups.items():
        if len(members) > MAX_GROUP_TOOLS:
            yield Finding(
                "group-too-large",
                "warning",
                tuple(tool.name for tool in members[:EXAMPLES_LISTED]),
                f"group '{name}' holds {len(members)} tools (over {MAX_GROUP_TOOLS}): a model that opens it loads "
                "them all, and group-first ranking cannot tell its jobs apart",
                "Split it by job (e.g. github_issues, github_code), each with a description of what it is for",
                {"group": name, "count": len(members)},
            )
    described = catalog.group_descriptions
    for name in sorted(set(described) - set(groups)):
        yield Finding(
            "group-unused", "info", (), f"the groups section describes '{name}', which no tool is in",
            "Set `group: " + name + "` on its tools, or remove the entry", {"group": name},
        )  # fmt: skip
    bare = [name for name in groups if not described.get(name)]
    if bare:
        yield Finding(
            "group-undescribed",
            "info",
            tuple(tool.name for name in bare[:3] for tool in groups[name][:1]),
            f"{len(bare)} of {len(groups)} groups have no description: {', '.join(bare[:5])}"
            + (" ..." if len(bare) > 5 else ""),
            "Add a `groups:` section to the catalog ({name: what its tools are for}); a namespace and the "
            "group ranking read it",
            {"groups": bare},
        )


def check_examples(catalog: Catalog) -> Iterable[Finding]:
    """One note for the tools without example requests (they rank on their own text only)."""
    without = [tool.name for tool in catalog if not tool.examples]
    if without:
        listed = ", ".join(without[:3]) + (f" and {len(without) - 3} more" if len(without) > 3 else "")
        yield Finding(
            "no-examples",
            "info",
            tuple(without[:EXAMPLES_LISTED]),
            f"{len(without)} of {len(catalog)} tools have no example requests: {listed}",
            "Add `examples` (requests each tool answers, worded as users ask them), or send POST /feedback "
            "after each tool call: both become views of the tool in the ranking",
            {"count": len(without)},
        )


def check_parameters(catalog: Catalog) -> Iterable[Finding]:
    for tool in catalog:
        properties = tool.parameters.get("properties") or {}
        if not isinstance(properties, dict):
            continue
        for name, schema in properties.items():
            if not isinstance(schema, dict):
                continue
            described = str(schema.get("description") or "").strip()
            if not described:
                yield Finding(
                    "parameter-without-description",
                    "warning",
                    (tool.name,),
                    f"parameter '{name}' of '{tool.name}' has no description",
                    f"Describe '{name}': its meaning, format and an example value",
                    {"parameter": name},
                )
            if schema.get("type") == "string" and "enum" not in schema and _ENUM_HINT.search(described):
                yield Finding(
                    "free-text-looks-like-enum",
                    "warning",
                    (tool.name,),
                    f"parameter '{name}' of '{tool.name}' is free text but its description lists choices: '{described}'",
                    f"Declare the choices as \"enum\": [...] on '{name}' so the model cannot invent values",
                    {"parameter": name},
                )
        required = tool.parameters.get("required") or []
        if isinstance(required, list) and len(required) > MAX_REQUIRED:
            yield Finding(
                "many-required-parameters",
                "info",
                (tool.name,),
                f"'{tool.name}' requires {len(required)} parameters",
                "Give defaults to the ones that have a sensible default, or split the tool",
                {"required": len(required)},
            )


def schema_tokens(catalog: Catalog, count: Callable[[str], int] | None = None) -> dict[str, int]:
    """Tokens each tool costs in a prompt (OpenAI form, compact JSON)."""
    count = count or default_token_counter()
    return {tool.name: count(orjson.dumps(format_tool(tool, "openai")).decode()) for tool in catalog}


def check_token_cost(tokens: dict[str, int]) -> Iterable[Finding]:
    for name, cost in tokens.items():
        if cost > MAX_SCHEMA_TOKENS:
            yield Finding(
                "costly-schema",
                "warning",
                (name,),
                f"'{name}' costs {cost} tokens each time it is sent",
                "Shorten long descriptions, drop rarely used optional parameters, or split the tool",
                {"tokens": cost},
            )


# -- checks that need the router ------------------------------------------------------------


def mean_pair_cosine(vectors: np.ndarray) -> float:
    """The mean cosine over all pairs of distinct rows (unit vectors), exactly, in O(n·d)."""
    count = vectors.shape[0]
    total = vectors.sum(axis=0, dtype=np.float64)
    return float((total @ total - count) / (count * (count - 1)))


def confusable_cosine(vectors: np.ndarray, closeness: float = CONFUSABLE_CLOSENESS) -> float:
    """The cosine above which two tools of this catalog are a confusable pair."""
    mean = mean_pair_cosine(vectors)
    return mean + closeness * (1.0 - mean)


def check_confusable(router: Router, closeness: float = CONFUSABLE_CLOSENESS) -> Iterable[Finding]:
    """Tools whose embeddings are so close, for this catalog and model, that the router can
    hardly tell them apart: a pair alone (``confusable-pair``), or a cluster of three or more
    joined by such pairs (``confusable-cluster``: one finding and one fix for all of them, not
    one per pair)."""
    catalog = router.catalog
    if len(catalog) < 2:
        return
    vectors = router.index.vectors.vectors(np.arange(len(catalog), dtype=np.int64))
    threshold = confusable_cosine(vectors, closeness)
    average = (threshold - closeness) / (1 - closeness)
    pairs = list(_close_pairs(vectors, threshold))
    for members in _clusters(pairs):
        inside = [(a, b, c) for a, b, c in pairs if a in members]
        if len(members) == 2:
            ((first, second, cosine),) = inside
            yield _pair_finding(catalog[first], catalog[second], cosine, threshold, average)
            continue
        names = [catalog[position].name for position in sorted(members)]
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        yield Finding(
            "confusable-cluster",
            "warning",
            tuple(names),
            f"{len(names)} tools read alike to the router ({len(inside)} pairs above cosine {threshold:.2f}; this "
            f"catalog's pairs average {average:.2f}): {shown}",
            "Merge the ones that do the same job; for the others, open each description with the case it is for "
            "and name the tool to use instead (\"For refunds by card, use refund_card_payment\")",
            {"pairs": [[catalog[a].name, catalog[b].name, round(c, 4)] for a, b, c in inside],
             "threshold": round(threshold, 4)},
        )  # fmt: skip


def _close_pairs(vectors: np.ndarray, threshold: float) -> Iterator[tuple[int, int, float]]:
    for start in range(0, len(vectors), 1024):
        block = vectors[start : start + 1024] @ vectors.T
        for row, column in zip(*np.nonzero(block >= threshold), strict=True):
            if start + int(row) < int(column):
                yield start + int(row), int(column), float(block[row, column])


def _clusters(pairs: list[tuple[int, int, float]]) -> list[set[int]]:
    """The tools the pairs join, as connected groups (largest first)."""
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for first, second, _ in pairs:
        parent[root(first)] = root(second)
    groups: dict[int, set[int]] = {}
    for node in parent:
        groups.setdefault(root(node), set()).add(node)
    return sorted(groups.values(), key=lambda group: (-len(group), min(group)))


def _pair_finding(a: Tool, b: Tool, cosine: float, threshold: float, average: float) -> Finding:
    mentions = b.name in a.description or a.name in b.description
    return Finding(
        "confusable-pair",
        "warning",
        (a.name, b.name),
        f"'{a.name}' and '{b.name}' are nearly the same to the router (cosine {cosine:.3f}; this catalog's "
        f"pairs average {average:.2f})",
        "Merge them if they do the same thing; otherwise say in each description when to use it "
        "and when to use the other" + ("" if not mentions else " (one already names the other: sharpen it)"),
        {"similarity": round(cosine, 4), "threshold": round(threshold, 4)},
    )


def check_model_language(router: Router) -> Iterable[Finding]:
    """An English-only model on a catalog described mostly in another script (Korean, Chinese,
    Cyrillic...): pinned by hand, since ``auto`` picks the multilingual model there. What it costs
    on the shared Korean set: benchmarks/DECISIONS.md."""
    share = non_latin_share(tool.description for tool in router.catalog)
    model = router.embedder.name
    if model not in ENGLISH_ONLY_MODELS or share < NON_LATIN_SHARE or router.ranking.lexical_weight >= 1.0:
        return
    yield Finding(
        "english-model-on-non-latin-catalog",
        "warning",
        (),
        f"the index uses {model}, which reads English only, but {share:.0%} of the letters in the "
        f"descriptions are in another script: its vectors see little of this catalog",
        "Build the index with the default model 'auto' (it picks multilingual-e5-small for this catalog), "
        f"or keep {model} and raise the lexical weight to about 1.0 (--lexical-weight, "
        f"TOOLSIFT_LEXICAL_WEIGHT; now {router.ranking.lexical_weight:g}) so BM25 carries the ranking",
        {"model": model, "non_latin_share": round(share, 3), "lexical_weight": router.ranking.lexical_weight},
    )


def check_queries(
    router: Router, queries: Sequence[tuple[str, Sequence[str]]], k: int = 5
) -> tuple[list[Finding], dict[str, dict[str, float]]]:
    """Route labelled queries: tools never retrieved, pairs the queries confuse, per-tool accuracy."""
    # findability, as ranked: an abstaining route would read as "never retrieved"
    results = router.route_many([text for text, _ in queries], k, min_confidence=0.0) if queries else []
    retrieved: set[str] = set()
    per_tool: dict[str, list[tuple[bool, bool]]] = {}
    confusions: dict[tuple[str, str], list[str]] = {}
    for (text, relevant), result in zip(queries, results, strict=True):
        names = result.names
        retrieved.update(names)
        for gold in relevant:
            per_tool.setdefault(gold, []).append((bool(names) and names[0] == gold, gold in names))
            if names and names[0] != gold and names[0] not in relevant:
                confusions.setdefault((gold, names[0]), []).append(text)
    findings = [
        Finding(
            "never-retrieved",
            "warning",
            (tool.name,),
            f"no query of the set retrieves '{tool.name}' in its top {k}",
            "Check its name and description use the words users ask with; add examples of requests it answers",
        )
        for tool in router.catalog
        if tool.name not in retrieved
    ]
    confused = [
        (pair, texts)
        for pair, texts in confusions.items()
        if len(texts) >= MIN_CONFUSIONS and len(texts) >= 0.1 * len(per_tool[pair[0]])
    ]
    for (gold, wrong), texts in sorted(confused, key=lambda item: (-len(item[1]), item[0]))[:MAX_CONFUSION_FINDINGS]:
        findings.append(
            Finding(
                "confused-by-queries",
                "warning",
                (gold, wrong),
                f"{len(texts)} queries for '{gold}' rank '{wrong}' first, e.g. '{texts[0]}'",
                f"Say in '{wrong}' when not to use it (use {gold} instead), and in '{gold}' the words these queries use",
                {"queries": texts[:5], "count": len(texts)},
            )
        )
    accuracy = {
        name: {
            "queries": float(len(rows)),
            "top1": sum(top for top, _ in rows) / len(rows),
            f"recall@{k}": sum(hit for _, hit in rows) / len(rows),
        }
        for name, rows in sorted(per_tool.items())
    }
    return findings, accuracy


def visible_findings(findings: Iterable[Finding], scope: Scope) -> list[Finding]:
    """The findings a caller with ``scope`` may read: none that names a tool beyond it, and a
    catalog-wide summary (``no-examples``) told with its tools only, never the catalog's counts."""
    if scope.is_everything:
        return list(findings)
    shown = []
    for finding in findings:
        if not finding.tools or not all(map(scope.contains, finding.tools)):
            continue  # a finding about the catalog at large is the operator's
        if finding.code == "no-examples":
            listed = ", ".join(finding.tools[:3]) + (
                f" and {len(finding.tools) - 3} more" if len(finding.tools) > 3 else ""
            )
            finding = replace(finding, message=f"{listed}: no example requests", details={})
        shown.append(finding)
    return shown


SECURITY_FIX = (
    "A definition must describe its tool, never address the model: remove the text. If the tool comes from an "
    "MCP server you do not control, do not serve it (keep its server's tools in quarantine until reviewed)"
)


def check_security(catalog: Catalog) -> Iterable[Finding]:
    """The ``security-*`` checks (``toolsift.catalog.security``): poisoned definitions."""
    for name, hits in scan_catalog(catalog).items():
        for hit in hits:
            tools = (name,) if hit.other is None else (name, hit.other)  # a tenant sees it only if it sees both
            yield Finding(hit.code, hit.severity, tools, f"'{name}': {hit.what}, in {hit.where}", SECURITY_FIX)


def lint_catalog(
    catalog: Catalog,
    router: Router | None = None,
    queries: Sequence[tuple[str, Sequence[str]]] = (),
    *,
    k: int = 5,
    closeness: float = CONFUSABLE_CLOSENESS,
    count_tokens: Callable[[str], int] | None = None,
    static: tuple[list[Finding], dict[str, int]] | None = None,
) -> LintReport:
    """Every check; ``static``: the catalog-only findings and token counts, computed elsewhere
    (``static_checks``, in another process for a large catalog)."""
    findings, tokens = static if static is not None else static_checks(catalog, count_tokens)
    findings = list(findings)
    accuracy = None
    if router is not None:
        findings += [*check_model_language(router), *check_confusable(router, closeness)]
        if queries:
            found, accuracy = check_queries(router, queries, k)
            findings += found
    findings.sort(key=lambda f: (SEVERITIES.index(f.severity), f.code, f.tools))
    return LintReport(catalog.source, len(catalog), findings, tokens, accuracy)


def static_checks(
    catalog: Catalog, count_tokens: Callable[[str], int] | None = None
) -> tuple[list[Finding], dict[str, int]]:
    """The checks that read the catalog alone (pure Python: seconds on a large catalog), and
    each tool's token cost."""
    tokens = schema_tokens(catalog, count_tokens)
    findings = [
        *check_security(catalog),
        *check_names(catalog),
        *check_descriptions(catalog),
        *check_parameters(catalog),
        *check_examples(catalog),
        *check_groups(catalog),
        *check_token_cost(tokens),
    ]
    return findings, tokens


def default_token_counter() -> Callable[[str], int]:
    from toolsift.router.tokens import token_counter

    try:
        return token_counter()
    except ToolsiftError:  # no tiktoken: about four characters a token
        return lambda text: max(1, len(text) // 4)
