"""The house drawn from the imports: no import circle in queue_pipeline/, no module too long.

An edge A -> B is any ``import`` or ``from ... import`` anywhere in module A
(module level, inside a function, under ``if TYPE_CHECKING:``), relative
imports resolved, that names module B of queue_pipeline: ``from P import x``
is an edge to ``P.x`` when that is a module, else to ``P`` (a package is its
``__init__``). A circle is a strongly connected component of more than one
module. It is broken by moving what both sides share down a floor, into a
module both import, not by hiding an import inside a function (the finder
sees those too). Reads source only: imports no TensorFlow.
"""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "queue_pipeline"

MAX_LINES = 520
# Modules over MAX_LINES (their lines when last split), each with why it is one
# idea: drop an entry once its file is split; no other module may pass MAX_LINES.
OVER_MAX_LINES: dict[str, int] = {}


def module_files(package: pathlib.Path = PACKAGE) -> dict[str, tuple[pathlib.Path, bool]]:
    """Dotted module name -> (its file, whether it is a package's ``__init__``)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


def import_edges(package: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source."""
    modules = module_files(package)
    root = package.name

    def owner(name: str) -> str | None:  # the module itself, or its nearest package
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(owner(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target != root and not target.startswith(root + "."):
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    found.add(full if full in modules else owner(target))
        edges[name] = {m for m in found if m is not None and m != name}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _describe(component: list[str], edges: dict[str, set[str]]) -> str:
    inside = set(component)
    return "\n".join(f"  {a} -> {b}" for a in component for b in sorted(edges[a] & inside))


def test_the_finder_sees_every_kind_of_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from typing import TYPE_CHECKING\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (package / "b.py").write_text("def f():\n    from . import a\n")
    (package / "c.py").write_text("import pkg\n")
    (package / "sub" / "__init__.py").write_text("from pkg import c\n")
    (package / "sub" / "d.py").write_text("from ..sub import e\nfrom .. import a, name\n")
    (package / "sub" / "e.py").write_text("from pkg.sub import d\nimport os\n")
    edges = import_edges(package)
    assert edges == {
        "pkg": set(),
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.a"},
        "pkg.c": {"pkg"},
        "pkg.sub": {"pkg.c"},
        "pkg.sub.d": {"pkg.sub.e", "pkg.a", "pkg"},
        "pkg.sub.e": {"pkg.sub.d"},
    }
    assert circles(edges) == [["pkg.a", "pkg.b"], ["pkg.sub.d", "pkg.sub.e"]]
    edges["pkg"].add("pkg.sub")  # the facade imports a module that imports it back
    assert sorted(circles(edges)) == [
        ["pkg", "pkg.c", "pkg.sub"],
        ["pkg.a", "pkg.b"],
        ["pkg.sub.d", "pkg.sub.e"],
    ]


def test_no_import_circle():
    edges = import_edges()
    found = circles(edges)
    assert not found, "import circles (move what both sides share down a floor):\n" + "\n".join(
        f"{len(c)} modules:\n{_describe(c, edges)}" for c in found
    )


def _lines(path: pathlib.Path) -> int:
    return len(path.read_text().splitlines())


def test_no_module_is_over_max_lines():
    over = {
        str(path.relative_to(PACKAGE)): _lines(path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if _lines(path) > MAX_LINES
    }
    unlisted = {name: n for name, n in over.items() if name not in OVER_MAX_LINES}
    assert not unlisted, f"modules over {MAX_LINES} lines (split them by idea): {unlisted}"
