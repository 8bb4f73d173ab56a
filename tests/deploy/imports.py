"""Which third-party distributions a service's image must contain, read from the code's import statements.

The judge and HUD images leave torch, Ray and PyBoy out. This walks the imports a service can execute (its
own package, whole; the shared modules it reaches; and, because ``zelda-rlaif --help`` builds every
subcommand's parser, the module-level imports of every service's ``cli.py``) and names the distributions
they need, so a slim image that would crash at start fails here first.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement

from tests.deploy.chart import ROOT

SOURCE_ROOTS = (ROOT / "shared", *(ROOT / "services").iterdir())


@dataclass
class ModuleImports:
    eager: set[str] = field(default_factory=set)  # run when the module is imported
    lazy: set[str] = field(default_factory=set)  # inside functions: run when they are called


@cache
def internal_modules() -> dict[str, Path]:
    """Dotted name -> file of every module of this repository's packages."""
    modules: dict[str, Path] = {}
    for root in SOURCE_ROOTS:
        if not root.is_dir():
            continue
        for path in root.rglob("*.py"):
            relative = path.relative_to(root).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            if parts and parts[0].startswith("zelda_") and "rom" not in parts:
                modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _guards_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if any(isinstance(n, ast.Name) and n.id in {"ImportError", "ModuleNotFoundError"} for n in names):
            return True
    return False


@cache
def module_imports(module: str) -> ModuleImports:
    path = internal_modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = ModuleImports()

    def visit(node: ast.AST, lazy: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for statement in node.orelse:
                visit(statement, lazy)
            return
        if isinstance(node, ast.Try) and _guards_import_error(node):
            return  # an optional import with a fallback
        if isinstance(node, ast.Import | ast.ImportFrom):
            target = found.lazy if lazy else found.eager
            target.update(_imported_names(node, package))
            return
        inner = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(), filename=str(path)), lazy=False)
    return found


def _imported_names(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    # `from package import module` imports a module; `from module import name` does not, harmlessly.
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def third_party_imports(full: Iterable[str], eager_only: Iterable[str]) -> set[str]:
    """Top-level names of the non-stdlib, non-internal modules reachable from the entry modules.

    Modules in ``full`` may have any function called; modules in ``eager_only`` are only imported.
    """
    modules = internal_modules()
    mode: dict[str, bool] = {}  # module -> followed fully?
    queue = [(m, True) for m in full] + [(m, False) for m in eager_only]
    outside: set[str] = set()
    while queue:
        module, fully = queue.pop()
        if module not in modules or mode.get(module, False) or (module in mode and not fully):
            continue
        mode[module] = fully
        parents = module.split(".")
        queue.extend((".".join(parents[:i]), False) for i in range(1, len(parents)))
        imports = module_imports(module)
        for name in imports.eager | (imports.lazy if fully else set()):
            if name in modules:
                queue.append((name, fully))
            elif name.split(".")[0] not in {m.split(".")[0] for m in modules}:
                outside.add(name.split(".")[0])
    return {name for name in outside if name not in sys.stdlib_module_names and name != "__future__"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def _providers() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def distributions_for(import_name: str) -> set[str]:
    return {_normalize(d) for d in _providers().get(import_name, [])}


def requirement_closure(requirements: Iterable[str]) -> set[str]:
    """Normalized names of the distributions ``requirements`` install, per this environment's metadata."""
    closure: set[str] = set()
    queue = [Requirement(r) for r in requirements]
    while queue:
        requirement = queue.pop()
        name = _normalize(requirement.name)
        extras = tuple(sorted(requirement.extras))
        key = f"{name}[{','.join(extras)}]"
        if key in closure:
            continue
        closure.update({key, name})
        try:
            declared = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: its own dependencies cannot be read, it still counts
        for line in declared:
            dependency = Requirement(line)
            contexts = [{"extra": extra} for extra in ("", *extras)]
            if dependency.marker is None or any(dependency.marker.evaluate(c) for c in contexts):
                queue.append(dependency)
    return {name for name in closure if "[" not in name}
