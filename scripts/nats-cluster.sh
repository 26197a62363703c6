#!/usr/bin/env bash
# A private NATS cluster for callwire's fleet (spec: docs of `callwire agent` / `serve --nats`),
# for its tests and for developers; the counterpart of scripts/docker-engine.sh.
#   scripts/nats-cluster.sh up         install nats-server (if needed), configure and start the
#                                      nodes, wait until every route is up, print the env lines
#   scripts/nats-cluster.sh down       stop the nodes and remove the state (config, credentials)
#   scripts/nats-cluster.sh env        print the env lines to eval (after "up" or "configure")
#   scripts/nats-cluster.sh configure  write configs and credentials only: for a caller that runs
#                                      the nodes itself (`nats-server -c $ROOT/node<N>/nats.conf`,
#                                      N = 1..nodes), as test/support/nats-cluster.ts does
#   scripts/nats-cluster.sh wait       wait until every node has a route to every other
# Idempotent: "up" on a running cluster rewrites the configs (a new host gets its user), reloads
# the nodes whose config changed, starts the nodes that are not running and checks the routes.
#
# Settings (environment):
#   CALLWIRE_NATS_ROOT           state directory (default /tmp/callwire-nats)
#   CALLWIRE_NATS_PORT           first client port (default 4222): node N listens on PORT+N-1
#   CALLWIRE_NATS_CLUSTER_PORT   first route port (default 6222), likewise
#   CALLWIRE_NATS_HTTP_PORT      first monitoring port (default 8222), likewise
#   CALLWIRE_NATS_CLIENT_PORTS, CALLWIRE_NATS_CLUSTER_PORTS, CALLWIRE_NATS_HTTP_PORTS
#                                explicit space-separated port lists instead of the bases; the
#                                number of client ports is the number of nodes (default 3)
#   CALLWIRE_NATS_ADDRS          space-separated address per node (default 127.0.0.1 for each)
#   CALLWIRE_NATS_HOSTS          agent host ids, space-separated (default "a b")
#   CALLWIRE_NATS_TLS=1          TLS on the client ports: a self-signed CA and a server cert
#
# Users and permissions (fleet design, "NATS users and permissions"):
#   gateway   publish callwire.host.*.to, callwire.fleet.hello;
#             subscribe callwire.host.*.from.*, callwire.host.*.beat, _INBOX.>
#   <host>    publish callwire.host.<host>.beat, callwire.host.<host>.from.*;
#             subscribe callwire.host.<host>.to, callwire.host.<host>.beat, callwire.fleet.hello,
#             _INBOX_<host>.>  (its own beats: a second agent of the id hears the first's)
# So the gateway is the only user that may publish on a host's `to` (an agent trusts the caller
# a gateway names there), and on callwire.fleet.hello.
# Passwords are generated once into $ROOT/credentials (mode 600) and kept across "up"s.
# The routes between nodes authenticate with a password of their own (never printed), so a
# local process cannot join as a route and bypass the permissions.
#
# Printed by "env" (and "up"), as `export NAME=value` lines:
#   CALLWIRE_NATS_URLS          nats://ADDR:PORT,... (tls://... with TLS)
#   CALLWIRE_NATS_HOSTS         the host ids the config has users for
#   CALLWIRE_NATS_GATEWAY_USER  gateway        CALLWIRE_NATS_GATEWAY_PASS  its password
#   CALLWIRE_NATS_HOST_<ID>_USER  <host>       CALLWIRE_NATS_HOST_<ID>_PASS  its password
#                               <ID> is the host id upper-cased with '-' as '_' (host "web-1":
#                               CALLWIRE_NATS_HOST_WEB_1_PASS); ids that collide are refused
#   CALLWIRE_NATS_CA            the CA certificate (only with TLS)
set -euo pipefail

ROOT="${CALLWIRE_NATS_ROOT:-/tmp/callwire-nats}"
CREDENTIALS="$ROOT/credentials"
CLUSTER_ENV="$ROOT/cluster.env" # what "env" prints
AUTH_CONF="$ROOT/auth.conf"
HOST_ID_PATTERN='^[a-z0-9][a-z0-9_-]{0,62}$'
NATS_BIN=nats-server

log() { printf '[nats-cluster] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

ports_from() { # list base count
  if [ -n "$1" ]; then echo "$1"; return; fi
  local i out=""
  for ((i = 0; i < $3; i++)); do out+="$(($2 + i)) "; done
  echo "$out"
}

read -r -a CLIENT_PORTS <<<"$(ports_from "${CALLWIRE_NATS_CLIENT_PORTS:-}" "${CALLWIRE_NATS_PORT:-4222}" 3)"
NODES=${#CLIENT_PORTS[@]}
read -r -a CLUSTER_PORTS <<<"$(ports_from "${CALLWIRE_NATS_CLUSTER_PORTS:-}" "${CALLWIRE_NATS_CLUSTER_PORT:-6222}" "$NODES")"
read -r -a HTTP_PORTS <<<"$(ports_from "${CALLWIRE_NATS_HTTP_PORTS:-}" "${CALLWIRE_NATS_HTTP_PORT:-8222}" "$NODES")"
read -r -a ADDRS <<<"${CALLWIRE_NATS_ADDRS:-$(printf '127.0.0.1 %.0s' $(seq 1 "$NODES"))}"
read -r -a HOSTS <<<"${CALLWIRE_NATS_HOSTS:-a b}"
TLS="${CALLWIRE_NATS_TLS:-0}"

check_settings() {
  [ "$NODES" -ge 1 ] || die "no client ports"
  [ "${#CLUSTER_PORTS[@]}" -eq "$NODES" ] && [ "${#HTTP_PORTS[@]}" -eq "$NODES" ] && [ "${#ADDRS[@]}" -eq "$NODES" ] ||
    die "$NODES client ports, but ${#CLUSTER_PORTS[@]} cluster ports, ${#HTTP_PORTS[@]} http ports and ${#ADDRS[@]} addresses"
  local host seen=" "
  for host in "${HOSTS[@]}"; do
    [[ "$host" =~ $HOST_ID_PATTERN ]] || die "host id '$host' is not ${HOST_ID_PATTERN} (one NATS subject token)"
    [ "$host" != gateway ] || die "host id 'gateway' is the gateway's user"
    var_id "$host"
    case "$seen" in *" $VAR_ID "*) die "host ids collide as CALLWIRE_NATS_HOST_${VAR_ID}_*" ;; esac
    seen+="$VAR_ID "
  done
}

# Sets VAR_ID (not printed: a subshell per host per use made a thousand hosts' configure take minutes).
var_id() { local id="${1^^}"; VAR_ID="${id//-/_}"; }

install_packages() {
  local missing=()
  command -v "$NATS_BIN" >/dev/null || missing+=(nats-server)
  command -v curl >/dev/null || missing+=(curl ca-certificates)
  if [ "$TLS" = 1 ] && ! command -v openssl >/dev/null; then missing+=(openssl); fi
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

random_secret() { od -An -tx1 -N24 /dev/urandom | tr -d ' \n'; }

# The credentials file, read once (write_credentials), then looked up here: a fleet's thousand
# hosts each need theirs three times, and a read of the file per need made configure quadratic.
declare -A CREDENTIAL=()

credential() { # NAME: its value in the credentials file, generated (and appended) the first time
  local value=${CREDENTIAL[$1]:-}
  if [ -z "$value" ]; then
    value=$(random_secret)
    echo "$1=$value" >>"$CREDENTIALS"
    CREDENTIAL[$1]=$value
  fi
  echo "$value"
}

write_credentials() {
  mkdir -p "$ROOT"
  chmod 700 "$ROOT"
  (umask 077 && touch "$CREDENTIALS")
  chmod 600 "$CREDENTIALS"
  local host name value
  while IFS='=' read -r name value; do [ -n "$name" ] && CREDENTIAL[$name]=$value; done <"$CREDENTIALS"
  credential CALLWIRE_NATS_ROUTE_PASS >/dev/null
  credential CALLWIRE_NATS_GATEWAY_PASS >/dev/null
  for host in "${HOSTS[@]}"; do
    var_id "$host"
    credential "CALLWIRE_NATS_HOST_${VAR_ID}_PASS" >/dev/null
  done
}

user_entry() { # user password publish-allow subscribe-allow (subjects comma-separated, quoted)
  printf '    {user: "%s", password: "%s", permissions: {publish: {allow: [%s]}, subscribe: {allow: [%s]}}}\n' "$1" "$2" "$3" "$4"
}

auth_config() {
  local host
  echo "authorization {"
  echo "  users = ["
  user_entry gateway "$(credential CALLWIRE_NATS_GATEWAY_PASS)" \
    '"callwire.host.*.to", "callwire.fleet.hello"' \
    '"callwire.host.*.from.*", "callwire.host.*.beat", "_INBOX.>"'
  for host in "${HOSTS[@]}"; do
    var_id "$host"
    user_entry "$host" "${CREDENTIAL[CALLWIRE_NATS_HOST_${VAR_ID}_PASS]}" \
      "\"callwire.host.$host.beat\", \"callwire.host.$host.from.*\"" \
      "\"callwire.host.$host.to\", \"callwire.host.$host.beat\", \"callwire.fleet.hello\", \"_INBOX_$host.>\""
  done
  echo "  ]"
  echo "}"
}

write_tls() {
  local dir="$ROOT/tls"
  [ -s "$dir/server.pem" ] && return
  mkdir -p "$dir"
  local san="DNS:localhost" addr
  for addr in $(printf '%s\n' "${ADDRS[@]}" | sort -u); do san+=",IP:$addr"; done
  (
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=callwire NATS test CA" \
      -keyout "$dir/ca-key.pem" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=callwire NATS" \
      -keyout "$dir/server-key.pem" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" -CAcreateserial \
      -days 3650 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
  )
  chmod 644 "$dir/ca.pem"
}

node_config() { # N (1-based)
  local i=$(($1 - 1)) j routes="" pass
  pass=$(credential CALLWIRE_NATS_ROUTE_PASS)
  for ((j = 0; j < NODES; j++)); do
    [ "$j" -eq "$i" ] || routes+="    \"nats-route://route:$pass@${ADDRS[$j]}:${CLUSTER_PORTS[$j]}\"\n"
  done
  cat <<EOF
server_name: "callwire-$1"
listen: "${ADDRS[$i]}:${CLIENT_PORTS[$i]}"
http: "${ADDRS[$i]}:${HTTP_PORTS[$i]}"
pid_file: "$ROOT/node$1/nats.pid"
log_file: "$ROOT/node$1/nats.log"
include "../auth.conf"
cluster {
  name: "callwire"
  listen: "${ADDRS[$i]}:${CLUSTER_PORTS[$i]}"
  authorization { user: "route", password: "$pass" }
  routes: [
$(printf '%b' "$routes")
  ]
}
EOF
  if [ "$TLS" = 1 ]; then
    cat <<EOF
tls {
  cert_file: "$ROOT/tls/server.pem"
  key_file: "$ROOT/tls/server-key.pem"
  timeout: 2
}
EOF
  fi
}

replace_if_changed() { # file: new content on stdin; prints "changed" when it differs
  local tmp="$1.new"
  (umask 077 && cat >"$tmp")
  if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1" && echo changed; fi
}

configure() { # prints the numbers of the nodes whose config changed
  check_settings
  write_credentials
  if [ "$TLS" = 1 ]; then write_tls; fi
  local auth_changed n urls="" scheme=nats
  auth_changed=$(auth_config | replace_if_changed "$AUTH_CONF")
  for ((n = 1; n <= NODES; n++)); do
    mkdir -p "$ROOT/node$n"
    if [ -n "$(node_config "$n" | replace_if_changed "$ROOT/node$n/nats.conf")" ] || [ -n "$auth_changed" ]; then echo "$n"; fi
  done
  if [ "$TLS" = 1 ]; then scheme=tls; fi
  for ((n = 0; n < NODES; n++)); do urls+="${urls:+,}$scheme://${ADDRS[$n]}:${CLIENT_PORTS[$n]}"; done
  local host
  {
    printf 'CALLWIRE_NATS_URLS=%s\n' "$urls"
    printf 'CALLWIRE_NATS_HOSTS=%q\n' "${HOSTS[*]}"
    if [ "$TLS" = 1 ]; then printf 'CALLWIRE_NATS_CA=%q\n' "$ROOT/tls/ca.pem"; fi
    echo "CALLWIRE_NATS_GATEWAY_USER=gateway"
    echo "CALLWIRE_NATS_GATEWAY_PASS=$(credential CALLWIRE_NATS_GATEWAY_PASS)"
    for host in "${HOSTS[@]}"; do
      var_id "$host"
      echo "CALLWIRE_NATS_HOST_${VAR_ID}_USER=$host"
      echo "CALLWIRE_NATS_HOST_${VAR_ID}_PASS=${CREDENTIAL[CALLWIRE_NATS_HOST_${VAR_ID}_PASS]}"
    done
  } | replace_if_changed "$CLUSTER_ENV" >/dev/null
}

print_env() {
  [ -f "$CLUSTER_ENV" ] || die "no cluster configured at $ROOT (run: $0 up)"
  sed 's/^/export /' "$CLUSTER_ENV"
}

running() { # PID: it runs (a zombie, ended but not yet reaped by whoever adopted it, does not)
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat:0:1}" != Z ]
}

node_pid() { # N: the pid of a running node, or nothing
  local pid
  pid=$(cat "$ROOT/node$1/nats.pid" 2>/dev/null) || return 0
  if running "$pid" && grep -q "$NATS_BIN" "/proc/$pid/cmdline" 2>/dev/null; then echo "$pid"; fi
}

start_nodes() { # changed node numbers as arguments
  local n pid
  for ((n = 1; n <= NODES; n++)); do
    pid=$(node_pid "$n")
    if [ -z "$pid" ]; then
      log "starting node $n on ${ADDRS[$((n - 1))]}:${CLIENT_PORTS[$((n - 1))]}"
      # Detached from our stdout, which a caller's $(...) reads to its end.
      nohup "$NATS_BIN" -c "$ROOT/node$n/nats.conf" </dev/null >>"$ROOT/node$n/stderr.log" 2>&1 &
    elif [[ " $* " == *" $n "* ]]; then
      log "reloading node $n ($pid): its config changed"
      kill -HUP "$pid"
    fi
  done
}

routes_of() { # N: the node's route count, from its monitoring endpoint; nothing while it does not answer
  # A node still starting refuses the ask: under pipefail and set -e that failure would end
  # the whole script, silently, before it prints the cluster's variables.
  { curl -fsS --max-time 2 "http://${ADDRS[$(($1 - 1))]}:${HTTP_PORTS[$(($1 - 1))]}/routez" 2>/dev/null || true; } |
    sed -n 's/.*"num_routes": *\([0-9]*\).*/\1/p'
}

wait_formed() {
  local n count formed
  for _ in $(seq 1 100); do
    formed=1
    for ((n = 1; n <= NODES; n++)); do
      count=$(routes_of "$n")
      if [ -z "$count" ] || [ "$count" -lt $((NODES - 1)) ]; then formed=0; break; fi
    done
    if [ "$formed" = 1 ]; then
      log "cluster formed: $NODES nodes, every route up"
      return
    fi
    sleep 0.2
  done
  log "the cluster did not form within 20 s (node $n has ${count:-no answer} of $((NODES - 1)) routes); its log:"
  tail -n 30 "$ROOT/node$n/nats.log" "$ROOT/node$n/stderr.log" >&2 2>/dev/null || true
  exit 1
}

stop_nodes() {
  local n pid
  for n in "$ROOT"/node*/; do
    [ -d "$n" ] || continue
    n=${n%/}
    pid=$(node_pid "${n##*node}")
    [ -n "$pid" ] || continue
    log "stopping node ${n##*node} ($pid)"
    kill "$pid"
    for _ in $(seq 1 50); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then kill -9 "$pid"; fi
  done
}

case "${1:-up}" in
  up)
    install_packages
    # shellcheck disable=SC2046 # one node number per word
    start_nodes $(configure)
    wait_formed
    print_env
    ;;
  configure)
    install_packages
    configure >/dev/null
    print_env
    ;;
  wait) wait_formed ;;
  down)
    stop_nodes
    rm -rf "$ROOT"
    ;;
  env) print_env ;;
  *) echo "usage: $0 up|down|env|configure|wait" >&2; exit 2 ;;
esac
