"""Imports flow one way: a lower layer never imports a higher one, and the units of one layer do
not import each other. Every import counts, those inside functions and TYPE_CHECKING blocks too."""

from __future__ import annotations

import ast
from pathlib import Path

import toolsift

PACKAGE = Path(toolsift.__file__).parent

LAYERS: list[set[str]] = [
    {"_version", "errors", "types", "text", "tracing", "wire"},
    {"catalog", "extras"},
    {"embeddings"},
    {"index"},
    {"router"},
    {"settings", "tenants", "curation", "mcp", "tuning"},
    {"service"},
    {"feedback_cli", "tune_cli", "import_cli", "bench"},
    {"cli", "client", "__init__"},
    {"console"},
    {"__main__"},
]
"""Lowest first. A unit is a top-level module or subpackage of toolsift."""

RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of(path: Path, root: Path) -> str:
    return path.relative_to(root).parts[0].removesuffix(".py")


def imported_units(source: str) -> set[str]:
    """The toolsift units a module's source imports."""
    units: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] if node.module != "toolsift" else [f"toolsift.{a.name}" for a in node.names]
        units |= {name.split(".")[1] for name in names if name.startswith("toolsift.")}
    return units


def violations(root: Path) -> list[str]:
    """Every import that goes up a layer or sideways to another unit of the same layer."""
    found = []
    for path in sorted(root.rglob("*.py")):
        unit = unit_of(path, root)
        for other in imported_units(path.read_text(encoding="utf-8")) - {unit}:
            if other not in RANK or unit not in RANK:
                found.append(f"{path.relative_to(root)}: {unit} or {other} is in no layer; add it to LAYERS")
            elif RANK[other] >= RANK[unit]:
                found.append(
                    f"{path.relative_to(root)}: {unit} (layer {RANK[unit]}) imports {other} (layer {RANK[other]})"
                )
    return found


def test_no_module_imports_a_higher_or_sibling_layer() -> None:
    assert violations(PACKAGE) == []


def test_every_unit_has_a_layer() -> None:
    units = {
        unit_of(path, PACKAGE) for path in PACKAGE.glob("*") if path.suffix == ".py" or (path / "__init__.py").exists()
    }
    assert units <= set(RANK), units - set(RANK)


def test_the_check_finds_upward_and_sideways_imports(tmp_path: Path) -> None:
    (tmp_path / "router").mkdir()
    (tmp_path / "router" / "delivery.py").write_text("def f():\n    from toolsift.service.schemas import route_body\n")
    (tmp_path / "curation").mkdir()
    (tmp_path / "curation" / "lint.py").write_text("from toolsift.mcp import live\nfrom toolsift import router\n")
    (tmp_path / "settings.py").write_text("from toolsift.router import RankingConfig\n")
    found = violations(tmp_path)
    assert found == [
        "curation/lint.py: curation (layer 5) imports mcp (layer 5)",
        "router/delivery.py: router (layer 4) imports service (layer 6)",
    ]
