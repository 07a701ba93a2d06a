#!/usr/bin/env bash
# A Docker Swarm of three test hosts on this one machine, for the cluster runtime's tests
# (`make test-cluster`, docs/testing.md "The test cluster"). Root only.
#
#   scripts/test-cluster.sh up     # start it; prints the settings as `export` lines on stdout
#   scripts/test-cluster.sh down   # take it all down again (idempotent)
#   eval "$(scripts/test-cluster.sh up)"
#
# Each host is a network namespace `swarmd-tcN` whose `eth0` (198.18.0.1N/24, from the
# benchmarking range) is one end of a veth pair; the other end, `stcN` in the root namespace, is a
# port of the bridge `stcbr0` (198.18.0.1/24). No namespace has a default route and nothing routes
# that /24 anywhere else, so the hosts reach each other and the root namespace and nothing more.
# A test cuts a host off with `ip link set stcN down` and restores it with `... up`.
#
# In each namespace runs a dockerd of its own, started with `nsenter --net=` (not `ip netns exec`,
# which remounts /sys and so hides the cgroup mounts the engine needs to run containers), with
# its own data root, exec root (and so its own containerd), pidfile, config file, cgroup parent
# (`swarmd-test-nodeN`, so its containers never share a cgroup folder with the main engine's) and
# unix socket, and a TLS port on its address (a throwaway CA made here; the client's cert, key and
# CA are SWARM_CLUSTER_TLS_DIR). Engines run `--bridge=none --iptables=false --ip-masq=false`: no
# docker0, no rule of theirs in the machine's iptables, and DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1
# so a task uses the node's image as it is and never asks a registry. Node 1 runs `swarm init`
# (the manager), nodes 2 and 3 join as workers.
#
# The swarm's dispatcher heartbeat is SWARM_TEST_CLUSTER_HEARTBEAT (default 4s, the swarm's own is
# 5s): the manager marks a node `down` when it has heard no heartbeat for 3 periods (swarmkit's
# grace multiplier), counted from the last heartbeat before the cut. With 2s a cut link made its node
# `down` after 3.8 to 7.3 s here (nine cuts): too close to the 2 to 4 s swarmd takes to find a node's
# engine unreachable for the test of a short partition, so 4s; a restored link made it `ready` within
# 0.1 to 1.3 s (docs/testing.md has the rest of what was measured).
#
# `down` ends the engines by pid (their pidfiles; then any process whose command line names this
# state folder, the engines' containerd and shims, and any process left in the engines' cgroups),
# unmounts what they left under the state folder, deletes the namespaces, veths and bridge, and
# removes the state folder. It never touches the machine's own dockerd (/var/run/docker.sock).
#
# Settings: SWARM_TEST_CLUSTER_DIR (state folder, default /tmp/swarmd-test-cluster),
# SWARM_TEST_CLUSTER_HEARTBEAT (e.g. 2s), SWARM_TEST_CLUSTER_IMAGES (images of the main engine to
# load into every node at `up`, space-separated; none by default: the cluster runtime loads its own).
#
# Gotchas found making it (Docker 20.10, cgroup v1):
# - `ip netns exec` remounts /sys for the namespace; dockerd then finds no cgroup mounts and every
#   container fails to start. nsenter --net keeps the mount namespace, so it works.
# - bridge-nf-call-iptables is 1 here: bridged traffic between the veths goes through the root
#   namespace's FORWARD chain. It is ACCEPT on this machine; with a DROP policy the hosts could not
#   reach each other (the script says so).
# - With no system containerd (/run/containerd/containerd.sock), each engine starts its own under
#   its exec root: the socket path must stay under 108 bytes, so keep the state folder short.
# - With --bridge=none a task with no network gets a loopback interface only. The swarm still makes
#   a docker_gwbridge (172.17.0.0/16) in each namespace for its ingress network; it leads nowhere.
# - A cut node's engine address stays in the bridge's neighbour table: a connection to it hangs
#   (neither connects nor fails) until the client's own timeout.
# - All engines read /etc/docker/key.json (no flag moves it in 20.10), so `docker info` shows one
#   engine ID for all three; the swarm's node ids are their own and differ.
set -euo pipefail

state="${SWARM_TEST_CLUSTER_DIR:-/tmp/swarmd-test-cluster}"
heartbeat="${SWARM_TEST_CLUSTER_HEARTBEAT:-4s}"
nodes=(1 2 3)
bridge=stcbr0
bridge_addr=198.18.0.1
port=2376
marker=".swarmd-test-cluster"

log() { echo "test-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

netns_of() { echo "swarmd-tc$1"; }
veth_of() { echo "stc$1"; }
addr_of() { echo "198.18.0.1$1"; }
sock_of() { echo "$state/node$1.sock"; }
dir_of() { echo "$state/node$1"; }
cgroup_parent_of() { echo "swarmd-test-node$1"; }

# The docker CLI on node N's unix socket (no TLS needed there; tests and this script use it).
node_docker() {
  local n="$1"
  shift
  DOCKER_HOST="unix://$(sock_of "$n")" DOCKER_CONTEXT= docker "$@"
}

# The seconds as a decimal since `start` (a value of $EPOCHREALTIME).
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

pid_alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

engine_pid() { cat "$(dir_of "$1")/dockerd.pid" 2>/dev/null || true; }

# --- up ---------------------------------------------------------------------------------------

# What exists of a cluster now, one line each; empty when nothing does.
present_parts() {
  [[ -e "$state/$marker" ]] && echo "state folder $state"
  ip link show "$bridge" >/dev/null 2>&1 && echo "bridge $bridge"
  local n
  for n in "${nodes[@]}"; do
    [[ -e "/var/run/netns/$(netns_of "$n")" ]] && echo "namespace $(netns_of "$n")"
    ip link show "$(veth_of "$n")" >/dev/null 2>&1 && echo "veth $(veth_of "$n")"
    pid_alive "$(engine_pid "$n")" && echo "dockerd of node $n (pid $(engine_pid "$n"))"
  done
  return 0
}

# The cluster is whole when every engine answers and sees a swarm of three ready nodes.
cluster_whole() {
  [[ -s "$state/exports" ]] || return 1
  local n
  for n in "${nodes[@]}"; do
    pid_alive "$(engine_pid "$n")" || return 1
    ip link show "$(veth_of "$n")" >/dev/null 2>&1 || return 1
  done
  [[ "$(node_docker 1 node ls --format '{{.Status}}' 2>/dev/null | grep -c '^Ready$')" == 3 ]]
}

make_network() {
  ip link add "$bridge" type bridge
  ip addr add "$bridge_addr/24" dev "$bridge"
  ip link set "$bridge" up
  local n ns veth
  for n in "${nodes[@]}"; do
    ns="$(netns_of "$n")"
    veth="$(veth_of "$n")"
    ip netns add "$ns"
    ip link add "$veth" type veth peer name "${veth}p"
    ip link set "${veth}p" netns "$ns"
    ip -n "$ns" link set "${veth}p" name eth0
    ip -n "$ns" addr add "$(addr_of "$n")/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip link set "$veth" master "$bridge"
    ip link set "$veth" up
  done
}

# A throwaway CA; a server cert per node with its address (and 127.0.0.1) as subjectAltName; one
# client cert. EC P-256 keys: instant to make, and both Go and Node speak them.
make_certs() {
  local tls="$state/tls" ca="$state/ca" n
  mkdir -p "$tls" "$ca"
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 7 \
    -subj "/CN=swarmd test cluster CA" -keyout "$ca/ca-key.pem" -out "$ca/ca.pem" 2>/dev/null
  cp "$ca/ca.pem" "$tls/ca.pem"
  sign() { # name subject extensions-file
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "/CN=$2" \
      -keyout "$ca/$1-key.pem" -out "$ca/$1.csr" 2>/dev/null
    openssl x509 -req -in "$ca/$1.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca-key.pem" -CAcreateserial \
      -days 7 -extfile "$3" -out "$ca/$1.pem" 2>/dev/null
  }
  for n in "${nodes[@]}"; do
    printf 'subjectAltName = IP:%s,IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' "$(addr_of "$n")" >"$ca/node$n.ext"
    sign "node$n" "node$n" "$ca/node$n.ext"
  done
  printf 'extendedKeyUsage = clientAuth\n' >"$ca/client.ext"
  sign client "swarmd" "$ca/client.ext"
  cp "$ca/client.pem" "$tls/cert.pem"
  cp "$ca/client-key.pem" "$tls/key.pem"
  chmod 0600 "$tls/key.pem" "$ca"/*-key.pem
}

# Nodes 1 and 2 have no docker0; node 3 has one (198.19.3.1/24, inside its namespace, no NAT), as a
# node set up the usual way does: a task there with no network of its own is given an interface on
# it, which the cluster runtime's sandboxes must drop before anything of the agent runs (the
# containment tests check it on every node).
bridge_of() { if [[ "$1" == 3 ]]; then echo "--bip=198.19.3.1/24"; else echo "--bridge=none"; fi; }

start_engine() {
  local n="$1" dir
  dir="$(dir_of "$n")"
  mkdir -p "$dir/data" "$dir/exec"
  echo '{}' >"$dir/daemon.json" # not /etc/docker/daemon.json, whatever the machine's engine uses
  # setsid: the engine outlives this script and is not in its process group (make's ^C). unshare
  # --uts: a hostname of its own (swarmd-tcN), which the swarm reports as the node's hostname.
  # setsid, nsenter, unshare and sh all exec, so $! is the engine's pid. --shutdown-timeout 2 for
  # plain containers; `down` kills the containers first all the same (stop_engines).
  DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 setsid nsenter --net="/var/run/netns/$(netns_of "$n")" -- \
    unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$(netns_of "$n")" \
    dockerd --config-file "$dir/daemon.json" --shutdown-timeout 2 \
    --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
    --cgroup-parent "$(cgroup_parent_of "$n")" \
    -H "unix://$(sock_of "$n")" -H "tcp://$(addr_of "$n"):$port" \
    --tlsverify --tlscacert "$state/ca/ca.pem" --tlscert "$state/ca/node$n.pem" --tlskey "$state/ca/node$n-key.pem" \
    $(bridge_of "$n") --iptables=false --ip-masq=false \
    >"$dir/dockerd.log" 2>&1 </dev/null &
  echo $! >"$dir/started.pid"
}

wait_engine() {
  local n="$1" i
  for i in $(seq 1 120); do
    node_docker "$n" version >/dev/null 2>&1 && return 0
    pid_alive "$(cat "$(dir_of "$n")/started.pid")" || break
    sleep 0.25
  done
  tail -n 20 "$(dir_of "$n")/dockerd.log" >&2 || true
  die "the dockerd of node $n did not answer on $(sock_of "$n") (log: $(dir_of "$n")/dockerd.log)"
}

form_swarm() {
  node_docker 1 swarm init --advertise-addr "$(addr_of 1)" --listen-addr "$(addr_of 1):2377" \
    --dispatcher-heartbeat "$heartbeat" >/dev/null
  local token n
  token="$(node_docker 1 swarm join-token -q worker)"
  for n in "${nodes[@]:1}"; do
    node_docker "$n" swarm join --token "$token" --advertise-addr "$(addr_of "$n")" \
      --listen-addr "$(addr_of "$n"):2377" "$(addr_of 1):2377" >/dev/null
  done
  local i
  for i in $(seq 1 120); do
    [[ "$(node_docker 1 node ls --format '{{.Status}}' | grep -c '^Ready$')" == 3 ]] && return 0
    sleep 0.25
  done
  node_docker 1 node ls >&2
  die "the swarm has not 3 ready nodes after 30 s"
}

load_images() {
  local image file n
  for image in ${SWARM_TEST_CLUSTER_IMAGES:-}; do
    file="$state/image.tar"
    log "loading $image into every node"
    DOCKER_HOST=unix:///var/run/docker.sock docker save "$image" -o "$file"
    for n in "${nodes[@]}"; do node_docker "$n" load -q -i "$file" >/dev/null; done
    rm -f "$file"
  done
}

write_exports() {
  local n ids=() socks=() links=() netns=() id ms
  for n in "${nodes[@]}"; do
    id="$(node_docker "$n" info --format '{{.Swarm.NodeID}}')"
    ids+=("$id=tcp://$(addr_of "$n"):$port")
    socks+=("$(sock_of "$n")")
    links+=("$(veth_of "$n")")
    netns+=("$(netns_of "$n")")
  done
  ms="$(node_docker 1 info --format '{{json .Swarm.Cluster.Spec.Dispatcher.HeartbeatPeriod}}')"
  ms=$((ms / 1000000)) # nanoseconds
  local IFS=,
  {
    echo "export SWARM_RUNTIME=cluster"
    echo "export SWARM_CLUSTER_MANAGER=tcp://$(addr_of 1):$port"
    echo "export SWARM_CLUSTER_NODES=${ids[*]}"
    echo "export SWARM_CLUSTER_TLS_DIR=$state/tls"
    echo "export SWARM_TEST_CLUSTER_STATE=$state"
    echo "export SWARM_TEST_CLUSTER_SOCKETS=${socks[*]}"
    echo "export SWARM_TEST_CLUSTER_LINKS=${links[*]}"
    echo "export SWARM_TEST_CLUSTER_NETNS=${netns[*]}"
    echo "export SWARM_TEST_CLUSTER_HEARTBEAT_MS=$ms"
  } >"$state/exports.tmp"
  mv "$state/exports.tmp" "$state/exports"
}

up() {
  if cluster_whole; then
    log "already up ($state)"
    cat "$state/exports"
    return 0
  fi
  local parts
  parts="$(present_parts)"
  if [[ -n "$parts" ]]; then
    log "a test cluster is half up; run \`$0 down\` first. What is there:"
    sed 's/^/  /' <<<"$parts" >&2
    exit 1
  fi
  [[ "$(id -u)" -eq 0 ]] || die "must run as root (network namespaces, dockerd)"
  local tool
  for tool in ip openssl dockerd docker nsenter setsid unshare; do
    PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup-machine.sh --cluster)"
  done
  if [[ "$(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo 0)" == 1 ]] &&
    iptables -S FORWARD 2>/dev/null | grep -q '^-P FORWARD DROP'; then
    log "warning: bridged traffic goes through iptables (bridge-nf-call-iptables=1) and FORWARD drops by default: the hosts may not reach each other"
  fi
  [[ -z "$(ip route show "${bridge_addr%.*}.0/24")" ]] ||
    die "${bridge_addr%.*}.0/24 is routed here already ($(ip route show "${bridge_addr%.*}.0/24")): the test hosts' addresses would clash"
  local start="$EPOCHREALTIME" n
  mkdir -p "$state"
  touch "$state/$marker"
  make_network
  make_certs
  for n in "${nodes[@]}"; do start_engine "$n"; done
  for n in "${nodes[@]}"; do wait_engine "$n"; done
  log "engines up in $(since "$start") s"
  form_swarm
  log "swarm of 3 formed in $(since "$start") s (dispatcher heartbeat $heartbeat)"
  load_images
  write_exports
  log "up in $(since "$start") s; \`$0 down\` takes it down"
  cat "$state/exports"
}

# --- down -------------------------------------------------------------------------------------

# Pids of the engines' own programs (dockerd, containerd, its shims) whose command line names the
# state folder (the shims name their socket under the exec root): never another engine's.
pids_naming_state() {
  local f pid exe
  for f in /proc/[0-9]*/cmdline; do
    pid="${f#/proc/}"
    pid="${pid%/cmdline}"
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
    case "${exe##*/}" in dockerd | containerd | containerd-shim* | docker-proxy) ;; *) continue ;; esac
    tr '\0' ' ' <"$f" 2>/dev/null | grep -qF -- "$state/" && echo "$pid"
  done
  return 0
}

# Pids still in an engine's cgroups (its containers' processes).
pids_in_cgroups() {
  local n
  for n in "${nodes[@]}"; do
    find "/sys/fs/cgroup/pids/$(cgroup_parent_of "$n")" "/sys/fs/cgroup/unified/$(cgroup_parent_of "$n")" \
      -name cgroup.procs -exec cat {} + 2>/dev/null || true
  done
}

wait_gone() { # seconds pid...
  local deadline=$((SECONDS + $1)) pid
  shift
  for pid in "$@"; do
    while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  done
}

stop_engines() {
  local n pid pids=()
  # Kill the containers first: an engine stopping gives each a swarm task's stop grace (10 s) however
  # short its --shutdown-timeout, and `sleep` as pid 1 ignores SIGTERM.
  for n in "${nodes[@]}"; do
    node_docker "$n" ps -q 2>/dev/null | xargs -r env DOCKER_HOST="unix://$(sock_of "$n")" docker kill >/dev/null 2>&1 &
  done
  wait
  for n in "${nodes[@]}"; do
    for pid in "$(engine_pid "$n")" "$(cat "$(dir_of "$n")/started.pid" 2>/dev/null || true)"; do
      pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    done
  done
  [[ ${#pids[@]} -gt 0 ]] && wait_gone 20 "${pids[@]}"
  local left
  mapfile -t left < <(pids_naming_state)
  if [[ ${#left[@]} -gt 0 ]]; then
    log "killing what is left of the engines: ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null || true
    wait_gone 5 "${left[@]}"
  fi
  # A frozen container (a test paused it) must be thawed to be killed.
  for n in "${nodes[@]}"; do
    find "/sys/fs/cgroup/freezer/$(cgroup_parent_of "$n")" -name freezer.state 2>/dev/null |
      while read -r f; do echo THAWED >"$f" 2>/dev/null || true; done || true
  done
  mapfile -t left < <(pids_in_cgroups)
  if [[ ${#left[@]} -gt 0 ]]; then
    log "killing container processes left in the engines' cgroups: ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null || true
    wait_gone 5 "${left[@]}"
  fi
}

remove_cgroups() {
  local n controller
  for n in "${nodes[@]}"; do
    for controller in /sys/fs/cgroup/*/; do
      [[ -d "$controller$(cgroup_parent_of "$n")" ]] || continue
      # Deepest first; a cgroup folder is removed with rmdir (its files are not files).
      find "$controller$(cgroup_parent_of "$n")" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  done
}

unmount_state() {
  local mounts
  # Deepest first (longest path), lazily: a stopped engine leaves none, a killed one may.
  mapfile -t mounts < <(awk -v p="$state/" 'index($2, p) == 1 { print length($2) " " $2 }' /proc/self/mounts | sort -rn | cut -d' ' -f2-)
  local m
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
}

down() {
  [[ "$(id -u)" -eq 0 ]] || die "must run as root"
  [[ ! -e "$state" || -e "$state/$marker" ]] || die "$state is not a test cluster's folder (no $marker); not touching it"
  local start="$EPOCHREALTIME" n
  [[ -d "$state" ]] && stop_engines
  remove_cgroups
  [[ -d "$state" ]] && unmount_state
  for n in "${nodes[@]}"; do
    ip netns del "$(netns_of "$n")" 2>/dev/null || true
    ip link del "$(veth_of "$n")" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$state"
  local parts
  parts="$(present_parts)"
  [[ -z "$parts" ]] || die "could not take down all of it:"$'\n'"$parts"
  log "down ($(since "$start") s)"
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
  echo "usage: $0 up|down   (state in \${SWARM_TEST_CLUSTER_DIR:-/tmp/swarmd-test-cluster})" >&2
  exit 2
  ;;
esac
