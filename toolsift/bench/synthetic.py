"""Seeded synthetic catalogs and queries for scale benchmarks (1k to 100k tools)."""

from __future__ import annotations

import random

from toolsift.catalog import Catalog, Tool

VERBS = [
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "export",
    "import",
    "sync",
    "archive",
    "approve",
    "cancel",
    "schedule",
    "send",
    "calculate",
    "validate",
    "convert",
    "summarize",
    "assign",
    "merge",
    "restore",
    "publish",
    "track",
    "book",
    "refund",
    "translate",
    "tag",
    "share",
]
OBJECTS = [
    "invoice",
    "order",
    "ticket",
    "customer",
    "report",
    "meeting",
    "document",
    "payment",
    "shipment",
    "contract",
    "employee",
    "product",
    "campaign",
    "message",
    "event",
    "account",
    "subscription",
    "dataset",
    "deployment",
    "alert",
    "lead",
    "task",
    "budget",
    "asset",
    "playlist",
    "reservation",
    "policy",
    "note",
    "recipe",
    "workout",
    "device",
    "license",
]
DOMAINS = [
    "billing",
    "crm",
    "support",
    "hr",
    "finance",
    "logistics",
    "marketing",
    "legal",
    "devops",
    "analytics",
    "retail",
    "travel",
    "health",
    "education",
    "media",
    "security",
    "sales",
    "inventory",
    "payroll",
    "procurement",
    "insurance",
    "banking",
    "energy",
    "real_estate",
]
QUALIFIERS = [
    "for a date range",
    "by id",
    "in bulk",
    "for the current user",
    "with filters",
    "across all regions",
    "for a given customer",
    "and notify the owner",
    "as PDF",
    "as CSV",
]
PARAMETERS = [
    "id",
    "customer_id",
    "start_date",
    "end_date",
    "status",
    "limit",
    "region",
    "owner",
    "amount",
    "currency",
    "format",
    "query",
    "priority",
    "note",
    "email",
    "tags",
]


def synthetic_catalog(size: int, seed: int = 0) -> Catalog:
    rng = random.Random(seed)
    tools = []
    for number in range(size):
        verb, obj, domain = rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(DOMAINS)
        params = rng.sample(PARAMETERS, rng.randint(1, 4))
        tools.append(
            Tool(
                name=f"{domain}_{verb}_{obj}_{number}",
                description=f"{verb.capitalize()} {obj} records in the {domain.replace('_', ' ')} system "
                f"{rng.choice(QUALIFIERS)}.",
                parameters={
                    "type": "object",
                    "properties": {p: {"type": "string", "description": f"The {p.replace('_', ' ')}"} for p in params},
                    "required": params[:1],
                },
                tags=(domain, verb),
            )
        )
    return Catalog(tools, source=f"synthetic-{size}")


def synthetic_queries(count: int, seed: int = 1) -> list[str]:
    """Distinct requests in the catalogs' vocabulary (distinct, so no query cache hits)."""
    rng = random.Random(seed)
    return [
        f"please {rng.choice(VERBS)} the {rng.choice(OBJECTS)} in {rng.choice(DOMAINS).replace('_', ' ')} "
        f"{rng.choice(QUALIFIERS)} (request {number})"
        for number in range(count)
    ]
