"""Import edges of a Python project as CPython's own import system finds them.

Usage: python3 python_imports.py ROOT > truth.jsonl

One JSON line per imported module: {"file", "line", "module", "resolved"}, where `module` is
written as in the source (`auth.jwt`, `.models`, `..`) and `resolved` the project file
CPython's PathFinder loads for it (relative to ROOT), or null when the module is not a file
of the project (the standard library, an installed package, a namespace package).

The search path is the project's: ROOT, ROOT/src when it exists, and the directory holding
the importing file's top-level package. Nothing is imported or executed: the finder only
looks at the file system, and ast reads the statements.
"""

import ast
import importlib.machinery
import importlib.util
import json
import os
import sys

SKIP_DIRS = {"node_modules", "dist", "build", "out", "coverage"}


def top_package_parent(path):
    d = os.path.dirname(path)
    top = None
    while os.path.isfile(os.path.join(d, "__init__.py")):
        top = os.path.dirname(d)
        d = os.path.dirname(d)
    return top


def package_of(path, base):
    rel = os.path.relpath(os.path.dirname(path), base)
    return "" if rel == "." else rel.replace(os.sep, ".")


def find(module, roots):
    """The file CPython's PathFinder loads for `module` on `roots`, without importing."""
    parts = module.split(".")
    locations = list(roots)
    origin = None
    for i, part in enumerate(parts):
        name = ".".join(parts[: i + 1])
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, locations)
            below = None if spec is None else spec.submodule_search_locations
            below = None if below is None else list(below)
        except KeyError:
            # A namespace package inside another: CPython computes its path from the parent
            # module, which it would have imported. Its portions are the directories.
            spec, below = True, [os.path.join(l, part) for l in locations
                                 if os.path.isdir(os.path.join(l, part))] or None
        if spec is None:
            return None
        origin = getattr(spec, "origin", None) if getattr(spec, "has_location", False) else None
        if i < len(parts) - 1:
            if not below:
                return None
            locations = below
    return origin if origin and os.path.isfile(origin) else None


def python_sources(root):
    """Every `.py` file under `root` that parses, as (path, ast), in path order; hidden
    directories and SKIP_DIRS left out."""
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in SKIP_DIRS)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(d, name)
            try:
                yield path, ast.parse(open(path, encoding="utf-8").read(), path)
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue


def main(root):
    root = os.path.abspath(root)
    src = os.path.join(root, "src")
    for path, tree in python_sources(root):
        top = top_package_parent(path)
        roots = [root] + ([src] if os.path.isdir(src) else []) + ([top] if top else [])
        # The file's module name is its path below the deepest search-path entry holding
        # it (a namespace package's files too: `src/flask/sansio/app.py` is
        # `flask.sansio.app`).
        base = max((r for r in roots if path.startswith(r + os.sep)), key=len)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                written = [(a.name, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                dotted = "." * node.level + (node.module or "")
                if node.level:
                    try:
                        absolute = importlib.util.resolve_name(dotted, package_of(path, base))
                    except (ImportError, ValueError):
                        absolute = None
                else:
                    absolute = dotted
                written = [(dotted, absolute)]
            else:
                continue
            for module, absolute in written:
                origin = find(absolute, roots) if absolute else None
                inside = origin and os.path.abspath(origin).startswith(root + os.sep)
                print(json.dumps({
                    "file": os.path.relpath(path, root).replace(os.sep, "/"),
                    "line": node.lineno,
                    "module": module,
                    "resolved": os.path.relpath(origin, root).replace(os.sep, "/") if inside else None,
                }))


if __name__ == "__main__":
    main(sys.argv[1])
