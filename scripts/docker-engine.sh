#!/usr/bin/env bash
# A private Docker engine for callwire's tests and for developers.
#   scripts/docker-engine.sh up     install (if needed) and start dockerd, import the test image
#   scripts/docker-engine.sh stop   stop it, keeping its images and containers (npm start's Ctrl-C)
#   scripts/docker-engine.sh down   stop it and remove its state
#   scripts/docker-engine.sh env    print the DOCKER_HOST line to eval
# Idempotent: "up" on a running engine only checks it. Needs root (dockerd does).
# No registry is reachable, so the test image is imported from a busybox-static rootfs.
set -euo pipefail

ROOT="${CALLWIRE_DOCKER_ROOT:-/tmp/callwire-docker}"
SOCK="$ROOT/docker.sock"
export DOCKER_HOST="unix://$SOCK"
IMAGE="${CALLWIRE_TEST_IMAGE:-callwire-test:busybox}"
DOCKER_BIN=/usr/bin/docker

log() { printf '[docker-engine] %s\n' "$*" >&2; }

ping_engine() { curl -fsS --max-time 2 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; }

install_packages() {
  if command -v dockerd >/dev/null && [ -x "$DOCKER_BIN" ] && [ -x /bin/busybox ] && /bin/busybox --list >/dev/null 2>&1 && command -v curl >/dev/null; then
    return
  fi
  log "installing docker.io, busybox-static and curl"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io busybox-static curl ca-certificates >/dev/null
}

start_engine() {
  if ping_engine; then
    log "engine already running at $SOCK"
    return
  fi
  mkdir -p "$ROOT/data" "$ROOT/exec"
  log "starting dockerd at $SOCK"
  nohup dockerd \
    --host "$DOCKER_HOST" \
    --data-root "$ROOT/data" \
    --exec-root "$ROOT/exec" \
    --pidfile "$ROOT/dockerd.pid" \
    --iptables=false --ip6tables=false --ip-masq=false --bridge=none \
    --storage-driver="${CALLWIRE_STORAGE_DRIVER:-overlay2}" \
    >"$ROOT/dockerd.log" 2>&1 &
  # After heavy use dockerd removes the network sandboxes its last run left before it
  # answers, which has taken 45 s: wait that long, and say why once it is slow.
  local wait_s="${CALLWIRE_DOCKERD_WAIT_S:-120}" said=0 waited stale
  for ((waited = 0; waited < wait_s * 5; waited++)); do
    if ping_engine; then
      log "engine is up"
      return
    fi
    if [ "$said" = 0 ] && [ "$waited" -ge 25 ]; then
      said=1
      stale=$(grep -c "Removing stale sandbox" "$ROOT/dockerd.log" 2>/dev/null || true)
      if [ "${stale:-0}" -gt 0 ]; then
        log "dockerd is removing the stale network sandboxes its last run left ($stale so far); after heavy use this takes up to a minute (waiting up to $wait_s s)"
      else
        log "dockerd has not answered for 5 s; still waiting, up to $wait_s s (its log: $ROOT/dockerd.log)"
      fi
    fi
    sleep 0.2
  done
  log "dockerd did not answer /_ping within $wait_s s; its log:"
  tail -n 30 "$ROOT/dockerd.log" >&2
  exit 1
}

import_image() {
  if "$DOCKER_BIN" image inspect "$IMAGE" >/dev/null 2>&1; then
    log "image $IMAGE present"
    return
  fi
  log "importing $IMAGE from busybox-static"
  local rootfs
  rootfs=$(mktemp -d)
  mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/etc" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev" "$rootfs/root"
  cp /bin/busybox "$rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$rootfs/bin/$applet"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$rootfs/etc/passwd"
  echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>"$rootfs/etc/passwd"
  echo 'root:x:0:' >"$rootfs/etc/group"
  echo 'nogroup:x:65534:' >>"$rootfs/etc/group"
  chmod 1777 "$rootfs/tmp"
  tar -C "$rootfs" -c . | "$DOCKER_BIN" import --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/bin' - "$IMAGE" >/dev/null
  rm -rf "$rootfs"
}

stop_dockerd() {
  if [ -f "$ROOT/dockerd.pid" ]; then
    local pid
    pid=$(cat "$ROOT/dockerd.pid")
    if kill -0 "$pid" 2>/dev/null; then
      log "stopping dockerd ($pid)"
      kill "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
}

stop_engine() {
  stop_dockerd
  # Leftover mounts under the data root would make rm fail.
  { grep -o " $ROOT[^ ]*" /proc/mounts 2>/dev/null || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$ROOT"
}

case "${1:-up}" in
  up)
    install_packages
    start_engine
    import_image
    echo "export DOCKER_HOST=$DOCKER_HOST"
    ;;
  stop) stop_dockerd ;;
  down) stop_engine ;;
  env) echo "export DOCKER_HOST=$DOCKER_HOST" ;;
  *) echo "usage: $0 up|stop|down|env" >&2; exit 2 ;;
esac
