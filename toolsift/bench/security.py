"""``toolsift security-bench``: how well the ``security-*`` lint tells poisoned tool definitions
from honest ones.

Per evaluation set (``benchmarks/security/sets.json``: poisoned definitions and honest look-alikes,
each judged in a catalog beside the real tools a confusable name may imitate): the share of poisoned
definitions flagged, per attack, and the share of honest ones flagged; per real catalog (every
shared dataset's ``tools.jsonl``, the bundled catalog): the share of its tools flagged. Shares come
with Wilson 95% intervals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolsift.bench.metrics import Z_95
from toolsift.catalog import load_catalog, parse_catalog
from toolsift.catalog.security import scan_catalog


def wilson(hits: int, total: int) -> list[float]:
    """The Wilson 95% interval of a share ``hits / total``."""
    if total == 0:
        return [0.0, 1.0]
    share = hits / total
    centre = (share + Z_95**2 / (2 * total)) / (1 + Z_95**2 / total)
    half = Z_95 * math.sqrt(share * (1 - share) / total + Z_95**2 / (4 * total**2)) / (1 + Z_95**2 / total)
    return [round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)]


def run_security(sets_folder: Path, catalogs: list[Path], echo: Callable[[str], None]) -> dict[str, Any]:
    squatted = json.loads((sets_folder / "squatted.json").read_text())
    sets = []
    for entry in json.loads((sets_folder / "sets.json").read_text()):
        poisoned = _judge(sets_folder / entry["poisoned"], squatted)
        honest = _judge(sets_folder / entry["honest"], squatted)
        caught = sum(bool(codes) for _, codes in poisoned)
        wrong = sum(bool(codes) for _, codes in honest)
        by_attack: dict[str, list[int]] = {}
        for row, codes in poisoned:
            counts = by_attack.setdefault(row["attack"].split("+")[0], [0, 0])
            counts[0] += bool(codes)
            counts[1] += 1
        sets.append(
            {
                "name": entry["name"], "status": entry["status"],
                "poisoned": len(poisoned), "detected": caught, "detected_ci95": wilson(caught, len(poisoned)),
                "honest": len(honest), "flagged": wrong, "flagged_ci95": wilson(wrong, len(honest)),
                "by_attack": {attack: {"detected": hit, "of": total} for attack, (hit, total) in sorted(by_attack.items())},
                "missed": [row["tool"]["name"] for row, codes in poisoned if not codes],
            }
        )  # fmt: skip
        echo(f"{entry['name']}: {caught}/{len(poisoned)} poisoned detected, {wrong}/{len(honest)} honest flagged")
    real = []
    for path in catalogs:
        catalog = load_catalog(path)
        flagged = scan_catalog(catalog)
        name = path.parent.name if path.name == "tools.jsonl" else path.stem
        real.append(
            {"catalog": name, "tools": len(catalog), "flagged": len(flagged),
             "flagged_ci95": wilson(len(flagged), len(catalog)), "examples": sorted(flagged)[:10]}
        )  # fmt: skip
        echo(f"{name}: {len(flagged)} of {len(catalog)} tools flagged")
    return {"schema": "toolsift-security/1", "sets": sets, "catalogs": real}


def _judge(path: Path, squatted: list[str]) -> list[tuple[dict[str, Any], list[str]]]:
    judged = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        real = [{"name": n, "description": f"The {n.replace('_', ' ')} tool."} for n in squatted]
        tools = [row["tool"], *(tool for tool in real if tool["name"] != row["tool"]["name"])]
        hits = scan_catalog(parse_catalog(tools, source=path.name)).get(row["tool"]["name"], [])
        judged.append((row, sorted({hit.code for hit in hits})))
    return judged


def security_table(document: dict[str, Any]) -> str:
    lines = [
        "| set | poisoned detected | 95% CI | honest look-alikes flagged | 95% CI | status |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in document["sets"]:
        lines.append(
            f"| {row['name']} | {row['detected']}/{row['poisoned']} | {_ci(row['detected_ci95'])} "
            f"| {row['flagged']}/{row['honest']} | {_ci(row['flagged_ci95'])} | {row['status']} |"
        )
    lines += ["", "| set | attack | detected |", "| --- | --- | ---: |"]
    for row in document["sets"]:
        for attack, counts in row["by_attack"].items():
            lines.append(f"| {row['name']} | {attack} | {counts['detected']}/{counts['of']} |")
    lines += ["", "| real catalog | tools | flagged | 95% CI |", "| --- | ---: | ---: | ---: |"]
    for row in document["catalogs"]:
        lines.append(f"| {row['catalog']} | {row['tools']} | {row['flagged']} | {_ci(row['flagged_ci95'])} |")
    return "\n".join(lines) + "\n"


def _ci(bounds: list[float]) -> str:
    return f"{bounds[0]:.3f}–{bounds[1]:.3f}"
