"""How a server takes in an edit, as an MCP client sees it.

Usage: after_edit.py SERVER_BINARY PROJECT_ROOT FILE [--edits N] [--wait S] [--new-files]
                     [-- SERVER_ARGS...]

Starts `serve` on PROJECT_ROOT (with the configured model: hybrid when the index is embedded),
asks five questions (first, then warm), then N times (default 2): appends a function to FILE
(relative to the root), waits S seconds (default 1.5: the watcher's sync has run; 0: an
agent that asks right after it saves, whose first answer syncs), asks the five again, waits 8 s (the
embedder commits the new chunks' vectors), asks again. With --new-files each edit instead
creates a file beside FILE that imports it (an agent adding a module), removed at the end.
Prints each call's milliseconds, then
what the server logged about its copies in memory (the full-text fields patched or read, the
vectors read). The server's debug log is /tmp/after_edit_server.log. FILE is restored at the
end, whatever happens. Needs the `mcp` package (see latency.py).
"""

import asyncio
import os
import re
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from script_args import split_server_args, take_option

QUESTIONS = [
    "resolve the config file",
    "how are css modules bundled",
    "hot module replacement update",
    "ssr externals",
    "optimize deps scan",
]
LOG = "/tmp/after_edit_server.log"


async def main():
    args, server_args = split_server_args(sys.argv[1:])
    edits = take_option(args, "--edits", int, 2)
    wait = take_option(args, "--wait", float, 1.5)
    new_files = "--new-files" in args
    if new_files:
        args.remove("--new-files")
    server, root, file = args
    path = f"{root}/{file}"
    original = open(path).read()
    directory, name = path.rsplit("/", 1)
    stem = name.rsplit(".", 1)[0]
    added = [f"{directory}/editProbe{i}.ts" for i in range(edits)]
    params = StdioServerParameters(
        command=server,
        args=["--root", root, *server_args, "serve"],
        env={"RUST_LOG": "codectx_store=debug,codectx_retrieval=debug,codectx_mcp=debug"},
    )
    try:
        async with stdio_client(params, errlog=open(LOG, "w")) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def ask(tag):
                    times = []
                    for q in QUESTIONS:
                        t = time.perf_counter()
                        await session.call_tool("codebase_search", {"query": q})
                        times.append((time.perf_counter() - t) * 1e3)
                    print(tag, " ".join("%.1f" % x for x in times), flush=True)

                await ask("first")
                await asyncio.sleep(5)
                await ask("warm")
                for i in range(edits):
                    if new_files:
                        with open(added[i], "w") as f:
                            f.write(f"import * as probed from './{stem}';\n\nexport function editProbe{i}(v) {{\n  return [probed, v * {i}];\n}}\n")
                    else:
                        with open(path, "a") as f:
                            f.write(f"\nexport function editProbe{i}(v) {{\n  return v * {i};\n}}\n")
                    await asyncio.sleep(wait)
                    await ask(f"edit{i}")
                    await asyncio.sleep(8)
                    await ask(f"edit{i}+8s")
    finally:
        open(path, "w").write(original)
        for file in added:
            if os.path.exists(file):
                os.remove(file)
    for line in open(LOG):
        if "full-text fields" in line or "vectors read" in line:
            print(re.sub(r"^\S+\s+DEBUG\s+", "", line.strip())[:200])


asyncio.run(main())
