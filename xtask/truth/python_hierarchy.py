"""Ancestor chains of a Python project's functions and classes, from CPython's ast.

Usage: python3 python_hierarchy.py ROOT > truth.jsonl

One JSON line per `def`, `async def` and `class`: {"file", "line", "name", "ancestors"}, where
`line` is where its name is written and `ancestors` the enclosing classes and functions,
outermost first.
"""

import ast
import json
import os
import sys

from python_imports import python_sources
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def visit(node, chain, rel, out):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, DEFS):
            out.append({"file": rel, "line": child.lineno, "name": child.name, "ancestors": chain})
            visit(child, chain + [child.name], rel, out)
        else:
            visit(child, chain, rel, out)


def main(root):
    root = os.path.abspath(root)
    for path, tree in python_sources(root):
        out = []
        visit(tree, [], os.path.relpath(path, root).replace(os.sep, "/"), out)
        for record in out:
            print(json.dumps(record))

if __name__ == "__main__":
    main(sys.argv[1])
