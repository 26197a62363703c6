#!/usr/bin/env bash
# npm run fleet: a demo fleet on this machine (docs/fleet.md "Running a fleet"), until Ctrl-C.
#   a 3-node NATS cluster           scripts/nats-cluster.sh up (users: gateway, a, b)
#   two Docker engines              scripts/docker-engine.sh up, the project's engine and a second
#                                   one under $CALLWIRE_FLEET_ENGINE_B (its own socket and state)
#   a container `demo` on each      so a/demo and b/demo show HOST/NAME
#   two agents                      callwire agent --host-id a (engine 1) and --host-id b (engine 2)
#   a gateway                       callwire serve --nats on $CALLWIRE_FLEET_PORT (7080; npm start
#                                   holds 7070): the Lab at http://127.0.0.1:7080/ shows both hosts
# Ctrl-C stops what it started, in reverse: the gateway, the agents, the demo containers it
# created, the engines and the NATS cluster it started. What was already running stays.
# Needs root when an engine or the cluster has to be started (as npm start does).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${CALLWIRE_FLEET_PORT:-7080}"
ENGINE_A="${CALLWIRE_DOCKER_ROOT:-/tmp/callwire-docker}"
ENGINE_B="${CALLWIRE_FLEET_ENGINE_B:-/tmp/callwire-docker-b}"
LOGS="${CALLWIRE_FLEET_LOGS:-/tmp/callwire-fleet-logs}"
DOCKER_BIN=/usr/bin/docker
IMAGE="${CALLWIRE_TEST_IMAGE:-callwire-test:busybox}"
CLI=(node dist/bin/callwire.js)

say() { printf '[npm run fleet] %s\n' "$*" >&2; }

# What this run started, for the cleanup to undo (and nothing else).
PIDS=()
STARTED_ENGINES=()
CREATED=()
STARTED_NATS=0
CLEANING=0

engine_answers() { curl -fsS --max-time 2 --unix-socket "$1/docker.sock" http://localhost/_ping >/dev/null 2>&1; }
# The first node's client port, as scripts/nats-cluster.sh picks it.
NATS_PORT="${CALLWIRE_NATS_CLIENT_PORTS:-${CALLWIRE_NATS_PORT:-4222}}"
NATS_PORT="${NATS_PORT## }"
NATS_PORT="${NATS_PORT%% *}"
nats_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$NATS_PORT") 2>/dev/null; }
# What is not running and must be started needs root: say so before trying, not after a failure.
need_root_for() {
  [ "$(id -u)" = 0 ] && return
  say "$1 is not running, and starting it needs root: run  npm run fleet  as root (sudo npm run fleet, where sudo is installed)"
  exit 1
}

cleanup() {
  [ "$CLEANING" = 1 ] && return
  CLEANING=1
  trap '' INT TERM HUP
  local pid stopped=()
  # The gateway (last started) first: its callers see it go before their hosts do.
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[$i]}
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  [ ${#PIDS[@]} -gt 0 ] && stopped+=("the gateway and the agents")
  local entry
  for entry in "${CREATED[@]}"; do
    DOCKER_HOST="unix://${entry%%=*}/docker.sock" "$DOCKER_BIN" rm -f "${entry#*=}" >/dev/null 2>&1 || true
  done
  [ ${#CREATED[@]} -gt 0 ] && stopped+=("the demo containers")
  for entry in "${STARTED_ENGINES[@]}"; do
    CALLWIRE_DOCKER_ROOT="$entry" bash scripts/docker-engine.sh stop >/dev/null 2>&1 || true
    stopped+=("the engine at $entry (its images stay)")
  done
  if [ "$STARTED_NATS" = 1 ]; then
    bash scripts/nats-cluster.sh down >/dev/null 2>&1 || true
    stopped+=("the NATS cluster")
  fi
  local line="" part
  for part in "${stopped[@]}"; do line+="${line:+; }$part"; done
  say "stopped: ${line:-nothing}"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM HUP
trap cleanup EXIT

[ -f dist/bin/callwire.js ] || { say "no dist/: run npm run build first (npm run fleet does)"; exit 1; }
# The gateway's port, before anything is started: taken, the gateway would fail last, after the engines and the cluster.
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  say "port $PORT is in use (another gateway, or a callwire serve): give the fleet's gateway another one, e.g.  CALLWIRE_FLEET_PORT=$((PORT + 10)) npm run fleet"
  exit 1
fi
# The flags of a long-lived process that moves large streams, from their one home (src/cli/node-flags.ts).
read -ra LONG_LIVED <<< "$(node --input-type=module -e "import { longLivedNodeFlags } from './dist/cli/node-flags.js'; console.log(longLivedNodeFlags.join(' '))")"
SERVING=(node "${LONG_LIVED[@]}" dist/bin/callwire.js)
mkdir -p "$LOGS"

# NATS: the cluster with a user per host; a running one is used and left running.
nats_was_up=0
nats_answers && nats_was_up=1
[ "$nats_was_up" = 1 ] || need_root_for "the NATS cluster (port $NATS_PORT)"
# Every long-lived process starts in a session of its own (setsid): a terminal's Ctrl-C
# reaches this script alone, which stops them in order (a Ctrl-C reaching all at once would
# stop an engine before its demo container is removed).
eval "$(CALLWIRE_NATS_HOSTS="a b" setsid bash scripts/nats-cluster.sh up)"
[ "$nats_was_up" = 1 ] || STARTED_NATS=1
say "NATS: $CALLWIRE_NATS_URLS"

# Two engines, each with its own socket, state and exec root; neither touches the host's
# network (docker-engine.sh runs dockerd with --bridge=none --iptables=false).
for root in "$ENGINE_A" "$ENGINE_B"; do
  if ! engine_answers "$root"; then
    need_root_for "the Docker engine at $root"
    STARTED_ENGINES+=("$root")
    CALLWIRE_DOCKER_ROOT="$root" setsid bash scripts/docker-engine.sh up >/dev/null
  else
    CALLWIRE_DOCKER_ROOT="$root" bash scripts/docker-engine.sh up >/dev/null 2>&1 # imports the image if missing
  fi
  if ! DOCKER_HOST="unix://$root/docker.sock" "$DOCKER_BIN" container inspect demo >/dev/null 2>&1; then
    DOCKER_HOST="unix://$root/docker.sock" "$DOCKER_BIN" run -d --name demo --network none --init \
      --label callwire.demo=true "$IMAGE" sh -c 'while :; do date; sleep 1; done' >/dev/null
    CREATED+=("$root=demo")
  else
    DOCKER_HOST="unix://$root/docker.sock" "$DOCKER_BIN" start demo >/dev/null
  fi
done
say "engines: a at $ENGINE_A, b at $ENGINE_B; a container demo on each"

# The agents: each with its own NATS user, its password in the environment (never argv).
start_agent() { # host engine-root
  local var
  var="CALLWIRE_NATS_HOST_${1^^}_PASS"
  DOCKER_HOST="unix://$2/docker.sock" CALLWIRE_NATS_PASS="${!var}" \
    setsid "${SERVING[@]}" agent --nats "$CALLWIRE_NATS_URLS" --host-id "$1" --nats-user "$1" --grace 2 \
    >"$LOGS/agent-$1.log" 2>&1 &
  PIDS+=($!)
}
start_agent a "$ENGINE_A"
start_agent b "$ENGINE_B"

CALLWIRE_NATS_PASS="$CALLWIRE_NATS_GATEWAY_PASS" setsid "${SERVING[@]}" serve --nats "$CALLWIRE_NATS_URLS" \
  --nats-user "$CALLWIRE_NATS_GATEWAY_USER" --port "$PORT" --no-webtransport --grace 2 \
  >"$LOGS/gateway.log" 2>&1 &
PIDS+=($!)

# Ready when the gateway answers a list with a row from each host.
ready=0
for _ in $(seq 1 100); do
  for pid in "${PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || { say "a process of the fleet exited; its logs are in $LOGS:"; tail -n 5 "$LOGS"/*.log >&2; exit 1; }
  done
  rows=$("${CLI[@]}" call --url "ws://127.0.0.1:$PORT/callwire" docker/container/list --input '{"all":false}' 2>/dev/null || true)
  if grep -q '"host": *"a"' <<<"$rows" && grep -q '"host": *"b"' <<<"$rows"; then ready=1; break; fi
  sleep 0.3
done
[ "$ready" = 1 ] || { say "the gateway did not see both hosts within 30 s; logs in $LOGS"; exit 1; }

cat >&2 <<EOF
[npm run fleet] a fleet of two hosts is serving; Ctrl-C stops it (logs: $LOGS)
  Lab        http://127.0.0.1:$PORT/   (both hosts in its Hosts panel)
  try        npx callwire exec --url ws://127.0.0.1:$PORT/callwire a/demo -- hostname
             npx callwire exec --url ws://127.0.0.1:$PORT/callwire -it b/demo sh
             npx callwire call --url ws://127.0.0.1:$PORT/callwire docker/container/list
EOF
# Wait for Ctrl-C (or a process of the fleet dying): `wait -n` returns on either.
wait -n "${PIDS[@]}" || true
say "a process of the fleet exited; stopping the rest (logs: $LOGS)"
