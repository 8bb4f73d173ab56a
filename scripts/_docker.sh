# Sourced by scripts/test and scripts/compose-check: the Docker engine (Debian's docker.io) and mmdebstrap.
#   docker_missing_packages   the Debian packages to install for them, if any
#   start_docker_daemon       starts dockerd in the background when it is not answering (root only)

docker_missing_packages() {
  local missing=""
  command -v dockerd >/dev/null || missing="$missing docker.io"
  command -v mmdebstrap >/dev/null || missing="$missing mmdebstrap"
  echo "$missing"
}

start_docker_daemon() {
  docker info >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null; then
    echo "no Docker engine answers and this user cannot start one: run as root (installs docker.io and starts" \
      "dockerd), or start dockerd yourself" >&2
    return 1
  fi
  # Its own session, so that the daemon outlives this script and a Ctrl-C in it.
  local log="${ZELDA_DOCKERD_LOG:-/var/log/zelda-rlaif-dockerd.log}"
  setsid dockerd >>"$log" 2>&1 </dev/null &
  local _
  for _ in $(seq 120); do
    docker info >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "dockerd did not answer within 60 s; its log: $log" >&2
  tail -n 20 "$log" >&2
  return 1
}
