#!/usr/bin/env bash
# A throwaway PostgreSQL server (Debian's) for the tests and benchmarks: its
# own cluster in a folder, reachable only on a unix socket in that folder.
#
#   scripts/postgres.sh start DIR   # prints the URL of database "notes" as role "gatehouse"
#   scripts/postgres.sh stop DIR
#
# As root, the server runs as the postgres user (the package's), or as a
# system user this script creates when there is none: PostgreSQL refuses to
# run as root. The role "gatehouse" logs in with a password (SCRAM), which is
# in the URL, so the tests see that the host never logs it.
# GATEHOUSE_PG_SHARED_BUFFERS sets the server's buffer cache (default 128MB,
# PostgreSQL's own; the benchmarks give it room for a million notes).
# GATEHOUSE_PG_SERVER_OPTIONS adds server options (e.g. "-c autovacuum_naptime=1",
# so a test sees autovacuum within seconds, not the default minute); they go
# through pg_ctl's shell, so a value with a space needs quotes of its own.
set -euo pipefail
action=${1:?usage: postgres.sh start|stop DIR}
dir=${2:?usage: postgres.sh start|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bin/pg_ctl ]] || { echo "postgres.sh: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }
port=5432
password=gatehouse-test-password

as_server_user() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u "$server_user" -- "$@"
  else
    "$@"
  fi
}

server_user=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  server_user=postgres
  if ! id -u "$server_user" >/dev/null 2>&1; then
    server_user=gatehouse-pg
    id -u "$server_user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$server_user"
  fi
fi

case $action in
start)
  mkdir -p "$dir"
  if [[ $(id -u) -eq 0 ]]; then chown "$server_user" "$dir"; fi
  chmod 755 "$dir" # the socket is here
  if [[ ! -f $dir/data/PG_VERSION ]]; then
    as_server_user "$bin/initdb" -D "$dir/data" -U admin --auth-local=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    # The role the host logs in as needs its password; the admin role (the
    # tests' own) is trusted on the socket.
    printf 'local all gatehouse scram-sha-256\nlocal all all trust\n' >"$dir/data/pg_hba.conf"
  fi
  as_server_user "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 ||
  as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -p $port -c max_connections=200 -c fsync=on -c shared_buffers=${GATEHOUSE_PG_SHARED_BUFFERS:-128MB} ${GATEHOUSE_PG_SERVER_OPTIONS:-}" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  psql=("$bin/psql" -h "$dir" -p "$port" -U admin -d postgres -v ON_ERROR_STOP=1 -qAt)
  if [[ -z $("${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname = 'gatehouse'") ]]; then
    "${psql[@]}" -c "CREATE ROLE gatehouse LOGIN PASSWORD '$password'" -c "CREATE DATABASE notes OWNER gatehouse"
  fi
  echo "postgresql://gatehouse:$password@/notes?host=$dir&port=$port"
  ;;
stop)
  [[ -f $dir/data/postmaster.pid ]] && as_server_user "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
*)
  echo "usage: postgres.sh start|stop DIR" >&2
  exit 2
  ;;
esac
