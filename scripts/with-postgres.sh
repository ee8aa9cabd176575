#!/usr/bin/env bash
# Runs a command next to a throwaway PostgreSQL server (what `.ci/run` runs the tests with):
#   scripts/with-postgres.sh npm test
# Installs Debian's `postgresql` when no server binary is found, creates a cluster in a temporary
# directory, starts it on a free loopback port (as the `postgres` user when run as root, since
# the server refuses to run as root), exports POSTBOX_TEST_PG_URL and POSTBOX_REQUIRE_PG=1 for
# the command, and stops the server and removes the directory when the command ends, however it
# ends. Fails, and runs nothing, if the server cannot start.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 command [args…]" >&2
  exit 2
fi

SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo "sudo")

# The newest installed server's binaries (Debian keeps them out of PATH).
find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"
    return 0
  fi
  return 1
}

BINDIR=$(find_bindir || true)
if [ -z "$BINDIR" ]; then
  echo "with-postgres: installing Debian's postgresql" >&2
  $SUDO apt-get update -qq
  # The package would start a cluster of its own; policy-rc.d 101 keeps services from starting.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    REMOVE_POLICY=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  if [ "${REMOVE_POLICY:-0}" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
  BINDIR=$(find_bindir || true)
  if [ -z "$BINDIR" ]; then
    echo "with-postgres: no PostgreSQL server binaries after installing postgresql" >&2
    exit 1
  fi
fi

# The server runs as postgres when we are root (it refuses root), else as ourselves.
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "with-postgres: running as root, but there is no postgres user to run the server as" >&2
    exit 1
  fi
  AS_PG=(runuser -u postgres --)
else
  AS_PG=()
fi

PGTMP=$(mktemp -d "${TMPDIR:-/tmp}/postbox-pg.XXXXXX")
chmod 755 "$PGTMP"
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$PGTMP"; fi
DATA="$PGTMP/data"
LOG="$PGTMP/server.log"
STARTED=0

stop_server() {
  local rc=$?
  if [ "$STARTED" = 1 ]; then
    "${AS_PG[@]}" "$BINDIR/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null 2>&1 \
      || "${AS_PG[@]}" "$BINDIR/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$PGTMP"
  exit "$rc"
}
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"${AS_PG[@]}" "$BINDIR/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$PGTMP/initdb.log" 2>&1 || {
  cat "$PGTMP/initdb.log" >&2
  echo "with-postgres: initdb failed" >&2
  exit 1
}

free_port() {
  node -e "const s=require('node:net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

# A test server: durability off (the tests kill Postbox processes, never this server), enough
# connections for the parallel test files and the multi-node tests' three pools each.
OPTS="-c listen_addresses=127.0.0.1 -c unix_socket_directories=$PGTMP -c max_connections=300 \
-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=128MB"

# The port is free when chosen but may be taken before the server binds it: a few tries.
for try in 1 2 3; do
  PORT=$(free_port)
  if "${AS_PG[@]}" "$BINDIR/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o "-p $PORT $OPTS" start >/dev/null 2>&1; then
    STARTED=1
    break
  fi
  echo "with-postgres: start on port $PORT failed (try $try)" >&2
done
if [ "$STARTED" != 1 ]; then
  cat "$LOG" >&2 || true
  echo "with-postgres: PostgreSQL did not start" >&2
  exit 1
fi
if ! "$BINDIR/pg_isready" -q -h 127.0.0.1 -p "$PORT" -t 30; then
  cat "$LOG" >&2 || true
  echo "with-postgres: PostgreSQL started but does not answer on 127.0.0.1:$PORT" >&2
  exit 1
fi

export POSTBOX_TEST_PG_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
export POSTBOX_REQUIRE_PG=1
echo "with-postgres: PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}') on $POSTBOX_TEST_PG_URL" >&2

# Not exec: the trap must run after the command to stop the server.
set +e
"$@"
rc=$?
set -e
exit "$rc"
