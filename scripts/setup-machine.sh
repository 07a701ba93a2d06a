#!/usr/bin/env bash
# Installs what sandboxes need from the machine when it is missing: bubblewrap (isolation),
# slirp4netns (a networked sandbox's own user-mode network) and iproute2 (the routes that keep the
# host's addresses out of its namespace). prlimit, setpriv and nsenter come with util-linux. With
# `--tests` (make test) also what only the tests use: prometheus and promtool, which
# test/e2e/prometheus.test.ts scrapes the daemon with (not for `make run`: Debian's package starts a
# Prometheus server of its own on systemd hosts), and chromium, which test/console drives through
# playwright-core (never a downloaded browser), and strace, with which
# test/sandbox/process-network-start.test.ts holds bwrap's loopback set-up. With `--cluster` (make
# test-cluster) what scripts/test-cluster.sh needs: the Docker engine and CLI it starts three of
# (docker.io), openssl for its throwaway CA, iproute2 for its namespaces, and util-linux's nsenter,
# unshare and setsid (util-linux is essential on Debian; checked all the same). As root on Debian: one
# `apt-get update`, one `apt-get install` of the missing packages, and nothing at all when every command is there. Not
# root: prints what to install and carries on; the daemon then refuses to start without bubblewrap
# (SWARM_ISOLATION).
set -euo pipefail

# command → the Debian package that provides it
declare -A PACKAGE_OF=(
  [bwrap]=bubblewrap
  [slirp4netns]=slirp4netns
  [ip]=iproute2
  [prometheus]=prometheus
  [promtool]=prometheus
  [chromium]=chromium
  [strace]=strace
  [dockerd]=docker.io
  [docker]=docker.io
  [openssl]=openssl
  [nsenter]=util-linux
  [unshare]=util-linux
  [setsid]=util-linux
)

missing=()
commands=(bwrap slirp4netns ip)
[[ "${1:-}" == "--tests" ]] && commands+=(prometheus promtool chromium strace)
[[ "${1:-}" == "--cluster" ]] && commands+=(dockerd docker openssl nsenter unshare setsid)
for command in "${commands[@]}"; do
  # ip lives in /usr/sbin, which a user's PATH may not hold.
  if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$command" >/dev/null 2>&1; then
    package="${PACKAGE_OF[$command]}"
    [[ " ${missing[*]} " == *" $package "* ]] || missing+=("$package")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ "$(id -u)" -ne 0 ]]; then
  echo "setup-machine: missing ${missing[*]}: install them as root (apt-get install ${missing[*]}); without bubblewrap the daemon refuses to start unless SWARM_ISOLATION=none" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-machine: missing ${missing[*]}, and this is not Debian (no apt-get): install them with the system's package manager" >&2
  exit 0
fi
echo "setup-machine: installing ${missing[*]}" >&2
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
