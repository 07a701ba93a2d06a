#!/usr/bin/env bash
# Builds the cluster runtime's sandbox image on this machine's engine: the sandbox image
# (scripts/build-sandbox-image.sh) plus the built harness under /opt/swarmd/dist/harness (its
# supervisor the container's command) and the few packages of node_modules the harness loads at run
# time, with /work, /control and /inputs owned as a cluster sandbox's fresh volumes must be. Tagged
# swarmd-sandbox-cluster:<12 hex of its content hash>, which the daemon computes the same way
# (src/sandbox/stream/cluster-image.ts, printed by scripts/cluster-image-plan.ts), and labelled
# swarmd.cluster-image=<the full hash>. An image of that tag is not built again.
#
#   scripts/build-cluster-image.sh     # after scripts/build-sandbox-image.sh (SANDBOX_IMAGE overrides the base)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "build-cluster-image: $*" >&2; exit 1; }
node_dir="$("$repo/scripts/node.sh" --quiet)" || die "no Node 24 (scripts/node.sh)"
plan="$(cd "$repo" && "$node_dir/node" --import tsx scripts/cluster-image-plan.ts)"
field() { "$node_dir/node" -e 'const p = JSON.parse(process.argv[1]); const v = p[process.argv[2]]; console.log(Array.isArray(v) ? v.join("\n") : v)' "$plan" "$1"; }
tag="$(field tag)"
hash="$(field hash)"
base="$(field baseImage)"
docker image inspect "$base" >/dev/null 2>&1 || die "the base image $base is not built (make sandbox-image)"
if [[ "$(docker image inspect "$tag" --format '{{index .Config.Labels "swarmd.cluster-image"}}' 2>/dev/null || true)" == "$hash" ]]; then
  echo "build-cluster-image: $tag is up to date"
  exit 0
fi

context="$(mktemp -d "${TMPDIR:-/tmp}/swarmd-cluster-image.XXXXXX")"
trap 'rm -rf "$context"' EXIT
mkdir -p "$context/opt/swarmd/dist"
cp -a "$repo/$(field harnessDir)" "$context/opt/swarmd/dist/harness"
while read -r dir; do
  [[ -n "$dir" ]] || continue
  mkdir -p "$context/opt/swarmd/$(dirname "$dir")"
  cp -a "$repo/$dir" "$context/opt/swarmd/$dir"
done < <(field packages)
command_json="$("$node_dir/node" -e 'console.log(JSON.stringify(JSON.parse(process.argv[1]).command))' "$plan")"
cat >"$context/Dockerfile" <<DOCKERFILE
FROM $base
COPY --chown=0:0 opt/swarmd /opt/swarmd
RUN ["/bin/sh", "-c", "chown 65532:65532 /work && chmod 0755 /work && chown 65533:65533 /control /inputs && chmod 0700 /control && chmod 0755 /inputs"]
LABEL swarmd.image=sandbox-cluster swarmd.cluster-image=$hash swarmd.checkout="$repo"
CMD $command_json
DOCKERFILE
echo "build-cluster-image: building $tag from $base ($(du -sh "$context/opt" | cut -f1) of harness and packages)"
previous="$(docker image ls --filter "label=swarmd.image=sandbox-cluster" --filter "label=swarmd.checkout=$repo" --format '{{.ID}}' | sort -u)"
# The classic builder: RUN with no network (the engine may have no bridge), no registry, no BuildKit.
built="$(DOCKER_BUILDKIT=0 docker build --network none -t "$tag" "$context" 2>&1)" || die "docker build failed: $built"
# Earlier cluster images of this checkout that no container uses are dropped; one a sandbox still runs stays.
for id in $previous; do
  [[ "$id" == "$(docker image inspect "$tag" --format '{{.ID}}' | cut -c8-19)" ]] && continue
  docker image rm "$id" >/dev/null 2>&1 || true
done
docker image inspect "$tag" --format "build-cluster-image: built $tag ({{.Size}} bytes)"
