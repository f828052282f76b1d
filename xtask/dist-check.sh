#!/usr/bin/env bash
# Checks the release artifacts of the host target offline, as a user would install them:
#
#   1. `dist build` makes the archive (its size is printed);
#   2. the shell installer, pointed at a loopback HTTP server serving that archive, installs
#      a working mcp-server into a fresh HOME (timed);
#   3. the npm package, packed with `npm pack` and installed from the tarball into a fresh
#      prefix, runs `mcp-server --version`, `setup claude-code --dry-run` (which must
#      register `npx -y codectx-mcp`) and a search on a small repository through npx.
#
# Needs cargo-dist (`cargo install cargo-dist --locked`), python3, node and npm. The release
# build (`--profile dist`) takes most of an hour on two cores the first time.
#
#   bash xtask/dist-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

target="$(rustc -vV | sed -n 's/^host: //p')"
distrib="$PWD/target/distrib"
work="$(mktemp -d)"
trap 'kill "${server_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== dist build ($target)"
started=$(date +%s)
dist build --artifacts=all --target "$target" >"$work/dist-build.log" 2>&1 \
  || { tail -30 "$work/dist-build.log"; exit 1; }
echo "built in $(($(date +%s) - started)) s"
archive="$distrib/codectx-mcp-$target.tar.xz"
tar -xJf "$archive" -C "$work"
printf 'archive %s: %s bytes (%s MiB); binary %s MiB\n' "$(basename "$archive")" \
  "$(stat -c %s "$archive")" "$(($(stat -c %s "$archive") / 1048576))" \
  "$(($(stat -c %s "$work/codectx-mcp-$target/mcp-server") / 1048576))"

echo "== loopback release server"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$distrib" >"$work/http.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port"

echo "== shell installer into a fresh HOME"
home="$work/home"
mkdir -p "$home"
started=$(date +%s%N)
HOME="$home" CARGO_HOME="$home/.cargo" CODECTX_MCP_DOWNLOAD_URL="$url" \
  sh "$distrib/codectx-mcp-installer.sh" --no-modify-path >"$work/installer.log" 2>&1 \
  || { cat "$work/installer.log"; exit 1; }
echo "installed in $((($(date +%s%N) - started) / 1000000)) ms"
"$home/.cargo/bin/mcp-server" --version

echo "== npm package from its tarball"
npm_dir="$work/npm-package"
cp -r "$distrib/codectx-mcp-npm-package" "$npm_dir"
# The published package downloads from the GitHub release; here, from the loopback server.
node -e '
  const fs = require("fs"), p = process.argv[1] + "/package.json";
  const pkg = JSON.parse(fs.readFileSync(p));
  pkg.artifactDownloadUrls = [process.argv[2]];
  fs.writeFileSync(p, JSON.stringify(pkg, null, 2));
' "$npm_dir" "$url"
(cd "$work" && npm pack "$npm_dir" >/dev/null 2>&1)
tarball="$(ls "$work"/codectx-mcp-*.tgz)"
prefix="$work/prefix"
mkdir -p "$prefix"
started=$(date +%s%N)
npm install --prefix "$prefix" --no-audit --no-fund "$tarball" >"$work/npm.log" 2>&1 \
  || { cat "$work/npm.log"; exit 1; }
echo "npm install in $((($(date +%s%N) - started) / 1000000)) ms"

repo="$work/repo"
mkdir -p "$repo/src"
cat >"$repo/src/auth.ts" <<'TS'
/** Checks a bearer token's signature and expiry. */
export function validateToken(token: string, now: number): boolean {
  const [payload, signature] = token.split(".");
  return signature === sign(payload) && JSON.parse(atob(payload)).exp > now;
}

function sign(payload: string): string {
  return btoa(payload).split("").reverse().join("");
}
TS
cd "$prefix"
npx --no-install mcp-server --version
npx --no-install mcp-server setup claude-code --root "$repo" --dry-run | tee "$work/setup.txt"
grep -q '"npx"' "$work/setup.txt" && grep -q 'codectx-mcp' "$work/setup.txt" \
  || { echo "setup under npx did not register npx -y codectx-mcp"; exit 1; }
npx --no-install mcp-server search --root "$repo" --embedder none "where are tokens validated" \
  | tee "$work/search.txt"
grep -q validateToken "$work/search.txt" || { echo "the search did not find validateToken"; exit 1; }
echo "== all checks passed"
