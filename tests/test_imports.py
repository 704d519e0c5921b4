"""The import graph of ``helpers`` and ``tools`` has no cycle, counting the imports made inside
functions too (a cycle hidden that way still ties two modules into one)."""

from __future__ import annotations

import ast

from tools.toc import ROOT


def _imports(path, name: str) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {module} | {f"{module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def import_graph(packages=("helpers", "tools")) -> dict[str, set[str]]:
    """``{module: the modules of ``packages`` it imports}``."""
    paths = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {name: (_imports(path, name) & set(paths)) - {name} for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(module, stack):
        state[module] = "open"
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                found.append(stack[stack.index(other):] + [module, other] if other in stack else [module, other])
            elif other not in state:
                visit(other, stack + [module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    return found


def test_the_import_graph_has_no_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}), "the check finds a cycle"
    assert not cycles({"a": {"b"}, "b": set()})
    assert cycles(import_graph()) == []
