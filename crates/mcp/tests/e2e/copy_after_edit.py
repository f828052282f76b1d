"""What a server does with its full-text copy after an edit.

Usage: copy_after_edit.py SERVER_BINARY PROJECT_ROOT FILE EDITS

Starts `serve` on PROJECT_ROOT (lexical), answers once (the copy is read in the background),
then EDITS times: appends a function to FILE (relative to the root), answers (the sync makes a
new version of the chunk table; the copy is patched, or read anew), waits 6 s. Prints what
the server logged about the copy (`RUST_LOG=codectx_store::text_table=debug`). FILE is
restored at the end, whatever happens. Needs the `mcp` package (see latency.py).
"""
import asyncio, sys, time, re
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    server, root, file, edits = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    path = f"{root}/{file}"
    original = open(path).read()
    params = StdioServerParameters(command=server, args=["--root", root, "--embedder", "none", "serve"],
                                   env={"RUST_LOG": "codectx_store::text_table=debug"})
    log = "/tmp/patch_server.log"
    try:
        async with stdio_client(params, errlog=open(log, "w")) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.call_tool("codebase_search", {"query": "parse a decorator"})
                await asyncio.sleep(6)
                for i in range(edits):
                    with open(path, "a") as f:
                        f.write(f"\nexport function patchProbe{i}(value) {{\n  return value + {i};\n}}\n")
                    await asyncio.sleep(1.5)
                    await session.call_tool("codebase_search", {"query": f"patch probe {i}"})
                    await asyncio.sleep(6)
    finally:
        open(path, "w").write(original)
    for line in open(log):
        if "full-text fields" in line:
            print(re.sub(r"^\S+\s+", "", line.strip())[:220])

asyncio.run(main())
