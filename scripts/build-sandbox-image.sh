#!/usr/bin/env bash
# Builds the docker runtime's sandbox image, swarmd-sandbox:<package.json version>, without any
# registry access: a root filesystem made of swarmd's Node 24 (scripts/node.sh: the machine's node
# when it is 24.x, else the pinned release under .node/), this machine's bash (pi's bash tool runs
# /bin/bash), setpriv (the harness starts its agent's tools as the agent's user), the shared
# libraries they need and a static busybox for the usual commands, brought
# in with `docker import`. swarmd itself is not in the image: sandboxes mount its harness bundle
# and node_modules read-only under /opt/swarmd. Containers run read-only, tools as uid 65532
# (`agent`) and the harness as 65533 (`harness`), with /work, /inputs and /control mounted from the
# sandbox's folder and a tmpfs /tmp as HOME.
#
#   scripts/build-sandbox-image.sh               # from swarmd's node and the host's binaries (no pull)
#   scripts/build-sandbox-image.sh --dockerfile  # docker build docker/sandbox (pulls node:24-slim)
# SANDBOX_IMAGE overrides the tag.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$repo/package.json")"
tag="${SANDBOX_IMAGE:-swarmd-sandbox:${version:?no version in package.json}}"

if [[ "${1:-}" == "--dockerfile" ]]; then
  exec docker build -t "$tag" "$repo/docker/sandbox"
fi

die() { echo "build-sandbox-image: $*" >&2; exit 1; }
# The node the daemon runs: the harness's code caches, made by the daemon's node, fit only it.
node_dir="$("$repo/scripts/node.sh" --quiet)" || die "no Node 24 (scripts/node.sh)"
node_bin="$node_dir/node"
node_version="$("$node_bin" --version)"
bash_bin="$(command -v bash)" || die "bash is not installed"
setpriv_bin="$(command -v setpriv)" || die "setpriv is not installed (util-linux)"
busybox_bin="$(command -v busybox)" || die "busybox is not installed (apt-get install -y busybox-static)"
ldd "$busybox_bin" >/dev/null 2>&1 && die "$busybox_bin is dynamically linked; install busybox-static"
docker info >/dev/null 2>&1 || die "no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock})"

rootfs="$(mktemp -d "${TMPDIR:-/tmp}/swarmd-rootfs.XXXXXX")"
trap 'rm -rf "$rootfs"' EXIT
cd "$rootfs"
mkdir -p bin sbin usr/bin usr/sbin usr/local/bin etc tmp work inputs control opt/swarmd proc sys dev root
chmod 1777 tmp

# A binary and every library the dynamic loader resolves for it, at the same paths as on the host.
copy_with_libs() {
  install -m 0755 "$(readlink -f "$1")" "./$2"
  ldd "$1" | grep -o '/[^ ]*' | while read -r lib; do
    mkdir -p ".$(dirname "$lib")"
    [[ -e ".$lib" ]] || cp -L "$lib" ".$lib"
  done
}
copy_with_libs "$node_bin" usr/local/bin/node
copy_with_libs "$bash_bin" bin/bash
copy_with_libs "$setpriv_bin" usr/bin/setpriv

install -m 0755 "$(readlink -f "$busybox_bin")" bin/busybox
# Applets at their usual paths (bin/sh, usr/bin/env, ...), never over a real binary copied above.
"$busybox_bin" --list-full | while read -r applet; do
  [[ -e "$applet" || -L "$applet" ]] || ln -s /bin/busybox "$applet"
done

cat >etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
agent:x:65532:65532:swarmd agent:/tmp:/bin/bash
harness:x:65533:65533:swarmd harness:/tmp:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >etc/group <<'GROUP'
root:x:0:
agent:x:65532:
harness:x:65533:
nogroup:x:65534:
GROUP
echo 'hosts: files dns' >etc/nsswitch.conf
[[ -f /etc/ssl/certs/ca-certificates.crt ]] && install -D -m 0644 /etc/ssl/certs/ca-certificates.crt etc/ssl/certs/ca-certificates.crt

previous="$(docker image inspect "$tag" --format '{{.Id}}' 2>/dev/null || true)"
echo "build-sandbox-image: importing $tag (node $node_version) from $(du -sh . | cut -f1) of files"
tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin' \
  --change 'ENV HOME=/tmp' \
  --change 'WORKDIR /work' \
  --change 'CMD ["sleep", "infinity"]' \
  --change "LABEL swarmd.image=sandbox swarmd.version=$version" \
  - "$tag" >/dev/null
# A rebuild leaves the previous image untagged: drop it unless a sandbox still uses it.
if [[ -n "$previous" && "$previous" != "$(docker image inspect "$tag" --format '{{.Id}}')" ]]; then
  docker image rm "$previous" >/dev/null 2>&1 || true
fi
docker image inspect "$tag" --format "build-sandbox-image: built $tag ({{.Size}} bytes)"
