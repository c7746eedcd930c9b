"""The import rules of DESIGN.md, checked with import-linter (contracts in pyproject.toml), and
no import circle anywhere in the server or the client."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

PACKAGES = ("app", "worker", "experiments", "client")


def test_import_rules_hold(repo_root: Path):
    contracts = tomllib.loads((repo_root / "pyproject.toml").read_text())["tool"]["importlinter"]
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=repo_root, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(contracts['contracts'])} kept, 0 broken" in result.stdout, result.stdout


def import_circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (Tarjan's
    strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_itself_through_others(repo_root: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root))
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert import_circles(graph) == []


def test_a_circle_is_found():
    graph = grimp.ImportGraph()
    for module in ("a", "a.loop", "a.runs", "a.runs.execution", "a.store"):
        graph.add_module(module)
    graph.add_import(importer="a.loop", imported="a.runs")
    graph.add_import(importer="a.runs", imported="a.runs.execution")
    graph.add_import(importer="a.runs.execution", imported="a.loop")
    graph.add_import(importer="a.runs.execution", imported="a.store")
    assert import_circles(graph) == [["a.loop", "a.runs", "a.runs.execution"]]


def foreign_imports(graph: grimp.ImportGraph, package: str, allowed: str) -> list[str]:
    """The imports of `package`'s modules that are neither the standard library nor `allowed`
    (a graph built with its external packages, each squashed to its top-level name)."""
    modules = {package} | graph.find_descendants(package)
    return sorted(
        f"{module} imports {imported}"
        for module in modules
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] not in sys.stdlib_module_names | {allowed}
    )


def test_experiments_galera_imports_only_the_standard_library_and_experiments(
    repo_root: Path, monkeypatch
):
    # Stricter than its import-linter contract, which can only forbid the packages it names.
    monkeypatch.syspath_prepend(str(repo_root))
    graph = grimp.build_graph("experiments", include_external_packages=True)
    assert foreign_imports(graph, "experiments.galera", "experiments") == []


def test_a_foreign_import_is_found():
    graph = grimp.ImportGraph()
    for module in ("e", "e.galera", "e.galera.kinds", "e.factors"):
        graph.add_module(module)
    graph.add_module("yaml", is_squashed=True)
    graph.add_module("math", is_squashed=True)
    graph.add_import(importer="e.galera.kinds", imported="e.factors")
    graph.add_import(importer="e.galera.kinds", imported="math")
    graph.add_import(importer="e.galera.kinds", imported="yaml")
    graph.add_import(importer="e.factors", imported="yaml")
    assert foreign_imports(graph, "e.galera", "e") == ["e.galera.kinds imports yaml"]
