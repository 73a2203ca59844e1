#!/bin/sh
# Starts a Docker engine for pairbench's docker sandbox backend and its tests, if
# none answers yet. Works where no bridge/iptables is available (containers run
# with --network none, which needs neither): vfs storage, no bridge, no iptables.
#
#   scripts/start-dockerd.sh            # idempotent; exits 0 once `docker info` answers
#
# Environment: DOCKERD_LOG (default /tmp/dockerd.log), DOCKERD_WAIT_S (default 60).
# Needs root (or a rootful dockerd started some other way) and Debian's docker.io.
set -eu

LOG="${DOCKERD_LOG:-/tmp/dockerd.log}"
WAIT_S="${DOCKERD_WAIT_S:-60}"

answers() { docker info >/dev/null 2>&1; }

if answers; then
  echo "dockerd already answers"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 && [ ! -x /usr/sbin/dockerd ]; then
  echo "dockerd not found: install Debian's docker.io (apt-get install -y docker.io)" >&2
  exit 2
fi
DOCKERD="$(command -v dockerd || echo /usr/sbin/dockerd)"

# A pid file left by an engine that is gone (the machine restarted under it) stops a new one from starting.
PIDFILE=/var/run/docker.pid
if [ -f "$PIDFILE" ] && ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  echo "removing $PIDFILE: its engine (pid $(cat "$PIDFILE")) is not running"
  rm -f "$PIDFILE"
fi

# setsid + nohup: the engine survives the shell (and CI step) that started it.
setsid nohup "$DOCKERD" --storage-driver=vfs --iptables=false --ip-masq=false --bridge=none \
  >"$LOG" 2>&1 </dev/null &

i=0
while [ "$i" -lt "$WAIT_S" ]; do
  if answers; then
    echo "dockerd answers after ${i}s (log: $LOG)"
    exit 0
  fi
  sleep 1
  i=$((i + 1))
done

echo "dockerd did not answer within ${WAIT_S}s; last lines of $LOG:" >&2
tail -n 40 "$LOG" >&2 || true
exit 1
