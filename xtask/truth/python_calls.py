"""Call sites of a Python project and what each calls, from jedi's go-to-definition.

Usage: python3 python_calls.py ROOT > truth.jsonl   (needs `pip install jedi`)

One JSON line per call whose callee is a name or a chain of attributes (`f()`,
`self.m()`, `mod.Class.method()`): {"file", "line", "name", "target"}, where `line` is the
call's line, `name` the callee's last name, and `target` the definition jedi goes to
({"file", "line"}: the file below ROOT and the line its name is written on), or null when
jedi finds none in the project (a builtin, another package, an untyped value it cannot
follow). The search path is the one python_imports.py uses: ROOT, `src/` and the top
package's directory.
"""

import ast
import json
import os
import sys

import jedi

from python_imports import python_sources, top_package_parent


def callee_name(func):
    """The last name of a callee spelled as a name or an attribute chain, and where it is
    written (line, column); None for anything else."""
    node = func
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    if isinstance(func, ast.Name):
        return func.id, func.lineno, func.col_offset
    # `a.b.attr`: the attribute ends the expression.
    return func.attr, func.end_lineno, func.end_col_offset - len(func.attr)


def main(root):
    root = os.path.abspath(root)
    src = os.path.join(root, "src")
    paths = [root] + ([src] if os.path.isdir(src) else [])
    tops = set()
    sources = list(python_sources(root))
    for path, _ in sources:
        top = top_package_parent(path)
        if top:
            tops.add(top)
    # The search path is the project's alone: an installed copy of the same package (in
    # site-packages) must not stand in for the project's own files.
    project = jedi.Project(root, sys_path=paths + sorted(tops), smart_sys_path=False)
    for path, tree in sources:
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        code = open(path, encoding="utf-8").read()
        script = jedi.Script(code, path=path, project=project)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            found = callee_name(node.func)
            if found is None:
                continue
            name, line, column = found
            target = None
            try:
                names = script.goto(line, column, follow_imports=True)
            except Exception:
                names = []
            for d in names:
                if d.module_path is None or d.line is None:
                    continue
                where = os.path.abspath(str(d.module_path))
                if where.startswith(root + os.sep) and where.endswith(".py"):
                    target = {"file": os.path.relpath(where, root).replace(os.sep, "/"), "line": d.line}
                    break
            print(json.dumps({"file": rel, "line": node.lineno, "name": name, "target": target}))


if __name__ == "__main__":
    main(sys.argv[1])
