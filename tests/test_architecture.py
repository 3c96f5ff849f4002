"""The dependency rules of docs/architecture.md, checked against the real import graph.

Every import of a seqpoint module counts, wherever it is written (module level, inside
a function, under ``if TYPE_CHECKING:``): a lazy import is still an arrow.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "seqpoint"
DOC = ROOT / "docs" / "architecture.md"

#: Foundation modules every package may import ("_base" in the doc's table).
BASE = frozenset({"exceptions", "_version", "_params", "_registry", "_config", "_jsonio", "_live", "_rng", "_signature"})
NUMPY_CORE = ("traces", "schedule", "measurements", "devices", "batching", "selection", "cache", "projection")
#: Packages whose work needs an optional extra, which they import only inside functions.
LAZY_EXTRAS = ("workloads", "profiling", "clocks", "validation", "executors", "integrations", "workflows", "reports",
               "testing")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """seqpoint modules imported anywhere in ``path`` (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            # "from seqpoint.x import _y" may name a module rather than an attribute.
            found.update(f"{mod}.{a.name}" for a in node.names)
    modules = {_module_name(p) for p in SRC.rglob("*.py")}
    return {m for m in found if m in modules}


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in SRC.rglob("*.py")}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "seqpoint"


def _rules() -> dict[str, set[str]]:
    """Package -> packages it may import, from the table of docs/architecture.md."""
    rules: dict[str, set[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|[^|]*\|([^|]*)\|\s*$", line)
        if not m:
            continue
        allowed = {w.strip() for w in m.group(2).split(",") if w.strip()}
        if "_base" in allowed:
            allowed = (allowed - {"_base"}) | BASE
        rules[m.group(1)] = allowed
    return rules


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_package_is_in_the_doc() -> None:
    rules = _rules()
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    # The top-level namespace and public top-level modules (seqpoint.testing) have rows too.
    packages |= {"seqpoint"} | {p.stem for p in SRC.glob("*.py")
                                if not p.stem.startswith("_") and p.stem not in BASE}
    assert packages - set(rules) == set(), "add these packages to docs/architecture.md"
    assert set(rules) - packages == set(), "docs/architecture.md lists packages that do not exist"


def test_no_forbidden_arrows() -> None:
    rules = _rules()
    bad = []
    for module, targets in _graph().items():
        src = _package(module)
        for target in targets:
            dst = _package(target)
            if dst == src or dst == "seqpoint":
                continue
            allowed = BASE if src in BASE else rules.get(src, set())
            if dst not in allowed:
                bad.append(f"{module} -> {target}")
    assert bad == [], "imports that docs/architecture.md forbids:\n" + "\n".join(sorted(bad))


def test_base_modules_import_only_exceptions() -> None:
    for module, targets in _graph().items():
        if _package(module) in BASE:
            assert {_package(t) for t in targets} <= {"exceptions", "_version"}, module


def test_no_circles_between_files() -> None:
    graph = _graph()
    # A package's __init__ re-exports its modules: that arrow is not a dependency of
    # the package on itself, so only arrows between distinct files of one stage and
    # across stages are considered (an __init__ importing its own children is fine).
    edges = {
        m: {t for t in ts if not (m.count(".") and t.startswith(m + "."))}
        for m, ts in graph.items()
    }
    assert _cycles(edges) == []


def test_no_circles_between_packages() -> None:
    pkg_graph: dict[str, set[str]] = defaultdict(set)
    for module, targets in _graph().items():
        for t in targets:
            a, b = _package(module), _package(t)
            if a != b:
                pkg_graph[a].add(b)
    assert _cycles(pkg_graph) == []


@pytest.mark.parametrize(
    "module", ["seqpoint", *(f"seqpoint.{p}" for p in (*NUMPY_CORE, *LAZY_EXTRAS))]
)
def test_import_loads_no_optional_extra(module: str) -> None:
    code = (
        f"import sys, {module}\n"
        "heavy = sorted(m for m in ('torch', 'matplotlib', 'pyarrow', 'transformers', 'lhotse', 'ray')"
        " if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import {module} loaded {out.stdout.strip()}"


def test_projection_does_not_load_profiling() -> None:
    code = "import sys, seqpoint.projection; print('seqpoint.profiling' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_type_checking_imports_of_seqpoint() -> None:
    offenders = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.ImportFrom) and (sub.module or "").startswith("seqpoint"):
                        offenders.append(f"{_module_name(path)}: {sub.module}")
    assert offenders == []


def _private(dotted: str) -> bool:
    """``seqpoint.<pkg>._x...``: a private module below a package (the top-level foundation
    modules, ``seqpoint._x``, are every package's)."""
    parts = dotted.split(".")
    return parts[0] == "seqpoint" and any(p.startswith("_") and not p.startswith("__") for p in parts[2:])


def _references(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, module, name)`` of every seqpoint import in ``path``, and every string that
    names a seqpoint module path (``monkeypatch.setattr("seqpoint.x._y.f", ...)``) as a module."""
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("seqpoint"):
            out += [(node.lineno, node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names if a.name.startswith("seqpoint")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("seqpoint."):
            out.append((node.lineno, node.value, None))
    return out


def _all_of(module: str) -> set[str] | None:
    """The ``__all__`` of a package's ``__init__`` (None for a module that is not a package)."""
    init = SRC.parent.joinpath(*module.split("."), "__init__.py")
    if not init.is_file():
        return None
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_no_package_imports_another_packages_private_module() -> None:
    """A package's face is its ``__init__``: what crosses is in its ``__all__`` (or a public module)."""
    bad = []
    for path in SRC.rglob("*.py"):
        me = _package(_module_name(path))
        for line, module, name in _references(path):
            if _package(module) == me:
                continue
            if _private(module) or (name is not None and _private(f"{module}.{name}")):
                bad.append(f"{path.relative_to(ROOT)}:{line} {module}{'' if name is None else '.' + name}")
            elif name is not None and (names := _all_of(module)) is not None and name not in names \
                    and not SRC.parent.joinpath(*module.split("."), name).with_suffix(".py").is_file() \
                    and not SRC.parent.joinpath(*module.split("."), name, "__init__.py").is_file():
                bad.append(f"{path.relative_to(ROOT)}:{line} {module}.{name} is not in its __all__")
    assert bad == []


def test_tests_reference_no_private_module() -> None:
    """Tests reach seqpoint as users do: through package namespaces, never a ``_module`` (not in an
    import, not in a monkeypatched path); the top-level foundation modules are private too."""
    hits = [f"{p.relative_to(ROOT)}:{line} {module}" for p in (ROOT / "tests").rglob("*.py")
            for line, module, name in _references(p)
            if any(x.startswith("_") and not x.startswith("__") for x in module.split(".")[1:])
            or (name is not None and name.startswith("_") and not name.startswith("__"))]
    assert hits == []
