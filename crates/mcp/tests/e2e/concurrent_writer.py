"""A server answering while another process edits, indexes and compacts the same index.

Usage: concurrent_writer.py SERVER_BINARY PROJECT_ROOT [--cycles N] [-- SERVER_ARGS...]

The server (`serve --no-watch`) answers `codebase_search` calls in a loop while a second
`mcp-server index` process writes a probe file under PROJECT_ROOT/src, indexes, and repeats
N times (default 40): every few cycles its upkeep compacts the tables and removes their
superseded versions. Prints how many answers succeeded and the first errors; the probe file
is removed at the end. Needs the `mcp` package (see latency.py).
"""

import argparse
import asyncio
import json
import pathlib
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUESTIONS = [
    "route matching",
    "compose middleware",
    "parse the request body",
    "cookie helpers",
    "validator",
]


def write_and_index(server, root, server_args, cycles):
    probe = pathlib.Path(root) / "src" / "codectx_probe.ts"
    try:
        for i in range(cycles):
            probe.write_text(
                "".join(
                    f"export function probe{j}(x: number): number {{ return x + {j}; }}\n"
                    for j in range(i + 1)
                )
            )
            subprocess.run(
                [server, *server_args, "--root", root, "index", "--no-embed"],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
    finally:
        probe.unlink(missing_ok=True)


async def main():
    parser = argparse.ArgumentParser(description="A server answering while another process writes.")
    parser.add_argument("server")
    parser.add_argument("root")
    parser.add_argument("--cycles", type=int, default=40)
    # What follows `--` is the server's own arguments (`-- --embedder none`).
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    server, root, cycles, server_args = args.server, args.root, args.cycles, argv[split + 1:]
    params = StdioServerParameters(
        command=server,
        args=[*server_args, "--root", root, "serve", "--no-watch"],
        env={"RUST_LOG": "warn"},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("codebase_search", {"query": "warm up"})
            writer = asyncio.get_running_loop().run_in_executor(
                None, write_and_index, server, root, server_args, cycles
            )
            answered, errors = 0, []
            while not writer.done():
                for question in QUESTIONS:
                    result = await session.call_tool("codebase_search", {"query": question})
                    if result.is_error:
                        errors.append(result.content[0].text[:300])
                    else:
                        answered += 1
            await writer
            print(json.dumps({"answered": answered, "errors": len(errors), "first_errors": errors[:3]}))


asyncio.run(main())
