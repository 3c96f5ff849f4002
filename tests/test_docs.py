"""The README's and docs' Python snippets import every seqpoint name they use (issue 32: the
README's Trainer section told users to call SeededSampler() without its import)."""

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import seqpoint

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Public names that are also everyday words in a snippet (``for run in ...``).
COMMON = {"run", "sweep", "validate", "project"}


def _public_names() -> set[str]:
    names: set[str] = set()
    for info in pkgutil.iter_modules(seqpoint.__path__, "seqpoint."):
        if info.name.rpartition(".")[2].startswith("_") or not info.ispkg:
            continue
        names |= set(getattr(importlib.import_module(info.name), "__all__", ()))
    names |= set(importlib.import_module("seqpoint.integrations.huggingface").__all__)
    return names - COMMON


def _sections(path: Path) -> list[str]:
    return re.split(r"\n(?=#+ )", path.read_text(encoding="utf-8"))


def _imported(section: str) -> set[str]:
    """Names imported by the section's code blocks, or by an import in its inline code."""
    found = set()
    for code in re.findall(r"```python\n(.*?)```", section, flags=re.S):
        found |= {a.asname or a.name for n in ast.walk(ast.parse(code))
                  if isinstance(n, ast.ImportFrom | ast.Import) for a in n.names}
    for names in re.findall(r"`from [\w.]+ import ([\w, ]+)`", section):
        found |= {n.strip() for n in names.split(",")}
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_snippets_import_the_seqpoint_names_they_use(path):
    public = _public_names()
    for section in _sections(path):
        imported = _imported(section)
        for code in re.findall(r"```python\n(.*?)```", section, flags=re.S):
            tree = ast.parse(code)
            defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
            used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            missing = sorted((used & public) - imported - defined)
            assert not missing, f"{path.name}: a snippet uses {missing} without importing them:\n{code}"
        # An inline statement on a user's object that calls a seqpoint name, as a user copies
        # it: `trainer.add_callback(SeededSampler())` (not a reference like `epoch_rng(seed, epoch)`).
        for span in re.findall(r"`([^`\n]*\b[a-z_]\w*\.\w+\([^`\n]*)`", section):
            called = set(re.findall(r"(?<![\w.])([A-Za-z_]\w*)\(", span)) & public
            missing = sorted(called - imported)
            assert not missing, f"{path.name}: `{span}` calls {missing}, which the section never imports"
