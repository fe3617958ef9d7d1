#!/usr/bin/env bash
# A local Gatehouse cluster on this machine: one Redis, N `gatehouse serve
# --transport http` instances sharing it, and nginx round-robin in front with
# no stickiness, as docs/scale-out.md describes for several machines.
#
#   scripts/cluster.sh up [N]       # N instances (default 3); the last line of stdout is the MCP URL
#   scripts/cluster.sh down         # stops everything `up` started
#   scripts/cluster.sh status       # what runs, with pids and ports
#   scripts/cluster.sh url          # the MCP URL again
#   scripts/cluster.sh kill K       # SIGKILL instance K (a crash)
#   scripts/cluster.sh stop K       # SIGTERM instance K (drains, then exits)
#   scripts/cluster.sh start K      # starts instance K again, on its port
#   scripts/cluster.sh reload [K]   # SIGHUP instance K, or every instance: re-reads its YAML
#   scripts/cluster.sh redis-stop   # SIGTERM Redis (it writes its append-only file and exits)
#   scripts/cluster.sh redis-start  # starts Redis again on the same socket and files
#
# Everything lives in one data folder, ${GATEHOUSE_CLUSTER_DIR:-$PWD/.cluster}:
#   state-key                  the one requestState key every instance seals with
#   redis/                     redis.conf, redis.sock, redis.pid, redis.log, the append-only file
#   nginx/                     nginx.conf, nginx.pid, error.log, access.log, temp/
#   gh-K/                      gatehouse.yaml, gatehouse.pid, gatehouse.log, port, data/
#   shared/                    memory.db (the memory family's notes, unless in PostgreSQL), conversations/
# `up` starts from a fresh folder: it removes one an earlier `up` left (never
# another folder) and refuses while anything in it still runs.
#
# Environment:
#   GATEHOUSE_CLUSTER_DIR      the data folder
#   GATEHOUSE_BIN              the gatehouse binary (default build/bin/gatehouse, built when missing)
#   GATEHOUSE_PLUGIN_DIR       plugin_dir for bare plugin names (default: beside the binary)
#   GATEHOUSE_CLUSTER_PLUGINS  the plugins entry, space-separated (default "session.so memory.so sessions.so");
#                              names with a slash are paths, e.g. a test plugin
#   GATEHOUSE_CLUSTER_FREE_FAMILIES  license.free_families, space-separated (default "session sessions memory")
#   GATEHOUSE_CLUSTER_SERVER_NAME   server.name of every instance (default gatehouse)
#   GATEHOUSE_CLUSTER_TOOL_TIMEOUT_MS  limits.tool_timeout_ms (default 120000); nginx waits longer
#   GATEHOUSE_CLUSTER_MEMORY_DATABASE  the memory family's database for every instance: a postgresql:// URL
#                                   (scripts/postgres.sh start DIR prints one); default shared/memory.db, a
#                                   SQLite file only instances of one machine can share
#   GATEHOUSE_CLUSTER_RATE_LIMITS   a rate_limits section in YAML flow style, e.g.
#                                   '{calls_per_second: 10, burst: 20}' (default: none)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${GATEHOUSE_CLUSTER_DIR:-$PWD/.cluster}
[[ $dir == /* ]] || dir=$PWD/$dir # nginx, Redis and the instances are given absolute paths
marker=.gatehouse-cluster
start_timeout_s=60 # a sanitizer build under load starts slowly

say() { echo "cluster: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# Whether process $1 runs; a zombie does not (an init that does not reap
# would otherwise keep a killed instance "alive").
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# Whether the process of pid file $1 runs.
alive() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && running "$pid"
}

# Runs the check "$@" every 0.1 s until it passes (true) or start_timeout_s
# have gone by (false).
until_ready() {
  local i
  for ((i = 0; i < start_timeout_s * 10; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# Sends signal $2 to the process of pid file $1 and waits for it to exit,
# SIGKILLing it after $3 seconds. The pid is read once: nginx and Redis remove
# their pid files themselves as they exit.
stop_process() {
  local pidfile=$1 signal=$2 patience=$3 pid
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  kill "-$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < patience * 10; i++)); do
    running "$pid" || break
    sleep 0.1
  done
  if running "$pid"; then
    say "pid $pid did not exit within ${patience}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    while running "$pid"; do sleep 0.05; done
  fi
  rm -f "$pidfile"
}

# A loopback port nothing listens on now, for nginx. It is below the
# ephemeral range, so an instance binding port 0 meanwhile cannot take it.
free_port() {
  local port low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  ((low > 20001)) || low=65536 # an unusual range: then any port above 20000
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % (low - 20000)))
    ((port < 65536)) || continue
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || {
      echo "$port"
      return
    }
  done
  die "found no free loopback port"
}

find_tool() { command -v "$1" 2>/dev/null || { [[ -x /usr/sbin/$1 ]] && echo "/usr/sbin/$1"; } || true; }

# What `up` needs, installed as the README's commands do: the Debian packages
# (scripts/install-deps.sh, which has redis-server and nginx), and a build when
# no binary is given or built yet.
prepare() {
  if [[ -z ${GATEHOUSE_BIN:-} ]]; then
    "$root/scripts/install-deps.sh"
    bin=$root/build/bin/gatehouse
    [[ -x $bin ]] || "$root/scripts/build.sh" -DGATEHOUSE_BUILD_TESTS=OFF -DGATEHOUSE_BUILD_BENCH=OFF
  else
    bin=$GATEHOUSE_BIN
    [[ -n $(find_tool redis-server) && -n $(find_tool nginx) ]] || "$root/scripts/install-deps.sh"
  fi
  [[ -x $bin ]] || die "no gatehouse binary at $bin"
  redis_server=$(find_tool redis-server)
  nginx=$(find_tool nginx)
  [[ -n $redis_server ]] || die "redis-server is not installed (scripts/install-deps.sh installs it)"
  [[ -n $nginx ]] || die "nginx is not installed (scripts/install-deps.sh installs it)"
  redis_cli=$(find_tool redis-cli)
  [[ -n $redis_cli ]] || die "redis-cli is not installed (it comes with redis-server)"
}

# The commands after `up` use the programs `up` used.
remember_tools() { printf 'bin=%q\nredis_server=%q\nredis_cli=%q\nnginx=%q\n' "$bin" "$redis_server" "$redis_cli" "$nginx" >"$dir/tools"; }
recall_tools() { source "$dir/tools"; }

# JSON strings are YAML strings, and quoting keeps odd paths safe.
quote() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

has_plugin() {
  local p
  for p in $plugins; do [[ $(basename "$p") == "$1" ]] && return 0; done
  return 1
}

# The YAML of instance $1. Only data_dir and http.instance_name differ between
# instances; docs/scale-out.md lists what must stay equal and why.
write_instance_config() {
  local k=$1 file=$dir/gh-$1/gatehouse.yaml p
  {
    echo "# Instance gh-$k of the local cluster, written by scripts/cluster.sh up."
    echo "# Every instance's file is this one but for data_dir and http.instance_name."
    echo "server:"
    echo "  name: $(quote "$server_name")   # the same on every instance: sealed requestState names it"
    echo "  title: Gatehouse"
    [[ -n ${GATEHOUSE_PLUGIN_DIR:-} ]] && echo "plugin_dir: $(quote "$GATEHOUSE_PLUGIN_DIR")"
    echo "data_dir: $(quote "$dir/gh-$k/data")"
    echo "log_level: info"
    echo "plugins:"
    for p in $plugins; do echo "  - $(quote "$p")"; done
    has_plugin memory.so || has_plugin sessions.so && echo "domains:"
    if has_plugin memory.so; then
      cat <<EOF
  memory:
    settings:
      database: $(quote "${memory_database:-$dir/shared/memory.db}")   # one database for every instance
    tools:
      forget_all:
        rules: >-
          forget_all deletes every note of the person you work for, critical
          ones included, and nothing brings them back. Call it only when the
          person asked in this conversation to delete all of their notes;
          to remove one note, use forget.
EOF
    fi
    if has_plugin sessions.so; then
      cat <<EOF
  sessions:
    exposure: on_demand        # listed | on_demand; SIGHUP every instance after changing it
    settings:
      bots:
        - {slug: demo-bot, name: Demo Bot, user_seq_id: 1}
      expiry_s: 600
EOF
    fi
    [[ -n $rate_limits ]] && echo "rate_limits: $rate_limits   # buckets in Redis: one quota for the whole cluster"
    cat <<EOF
limits:
  tool_timeout_ms: $tool_timeout_ms    # nginx's proxy_read_timeout is longer
session:
  backend: redis
  redis:
    url: $(quote "unix://$dir/redis/redis.sock")
    key_prefix: "gatehouse:"   # the same on every instance: it names the cluster's keys and bus channel
  conversations_dir: $(quote "$dir/shared/conversations")
  idle_expiry_s: 28800
  pinned: {store: demo-shop, user: demo}
  grants:
    demo-shop:
      demo: [memory.read, memory.write, sessions]
  rules: >-
    Work only on what the person asked for. Never show the store password or
    card numbers. Ask before anything that changes money or deletes data.
license:
  free_families: [$(echo $free_families | sed 's/ /, /g')]   # and no vendor keys: nothing else runs
  vendor_keys: {}
input_requests:
  state_keys: [$(quote "$(cat "$dir/state-key")")]   # the same on every instance
  state_ttl_ms: 600000
http:
  public_url: $(quote "http://127.0.0.1:$(cat "$dir/nginx/port")")   # links (confirmation pages) name the proxy
  instance_name: gh-$k
EOF
  } >"$file.tmp"
  mv "$file.tmp" "$file"
  chmod 600 "$file" # it holds the requestState key
}

write_redis_config() {
  cat >"$dir/redis/redis.conf" <<EOF
# Written by scripts/cluster.sh up. A Unix socket in the data folder: no port to collide.
port 0
unixsocket $dir/redis/redis.sock
unixsocketperm 700
daemonize yes
pidfile $dir/redis/redis.pid
logfile $dir/redis/redis.log
dir $dir/redis
# Every write reaches the append-only file, so redis-stop and redis-start keep the sessions.
appendonly yes
appendfsync everysec
save ""
EOF
}

redis_start() {
  alive "$dir/redis/redis.pid" && die "Redis already runs (pid $(cat "$dir/redis/redis.pid"))"
  rm -f "$dir/redis/redis.sock"
  "$redis_server" "$dir/redis/redis.conf" </dev/null >>"$dir/redis/redis.log" 2>&1 ||
    die "redis-server did not start; see $dir/redis/redis.log"
  until_ready redis_answers || die "Redis did not answer; see $dir/redis/redis.log"
  say "Redis at unix://$dir/redis/redis.sock (pid $(cat "$dir/redis/redis.pid"))"
}

redis_answers() {
  [[ -S $dir/redis/redis.sock ]] && "$redis_cli" -s "$dir/redis/redis.sock" ping 2>/dev/null | grep -q PONG
}

redis_stop() {
  [[ -f $dir/redis/redis.pid ]] || return 0
  stop_process "$dir/redis/redis.pid" TERM 20
  say "Redis stopped"
}

# Starts instance $1 on port $2 (0: any free one, recorded in gh-K/port).
instance_start() {
  local k=$1 port=$2 here=$dir/gh-$1 offset url
  alive "$here/gatehouse.pid" && die "gh-$k already runs (pid $(cat "$here/gatehouse.pid"))"
  rm -f "$here/gatehouse.pid"
  touch "$here/gatehouse.log"
  offset=$(($(stat -c %s "$here/gatehouse.log") + 1))
  # Its own session, so a terminal's signals never reach it; the pid is the
  # binary's own (bash execs it).
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$here/gatehouse.pid" \
    "$bin" serve --config "$here/gatehouse.yaml" --transport http --listen "127.0.0.1:$port" \
    </dev/null >>"$here/gatehouse.log" 2>&1 &
  for ((i = 0; i < start_timeout_s * 10; i++)); do
    url=$(tail -c "+$offset" "$here/gatehouse.log" | grep -o 'serving MCP over HTTP at http://[^ ]*' | head -n 1 || true)
    if [[ -n $url ]]; then
      url=${url##* }
      port=${url#http://127.0.0.1:}
      port=${port%%/*}
      echo "$port" >"$here/port"
      say "gh-$k at $url (pid $(cat "$here/gatehouse.pid"))"
      return
    fi
    if [[ -f $here/gatehouse.pid ]] && ! alive "$here/gatehouse.pid"; then
      tail -c "+$offset" "$here/gatehouse.log" | tail -n 20 >&2
      die "gh-$k exited at start; its log is $here/gatehouse.log"
    fi
    sleep 0.1
  done
  die "gh-$k did not start listening; see $here/gatehouse.log"
}

# Sends signal $2 to instance $1 and waits for its exit.
instance_signal_stop() {
  local k=$1 signal=$2 here=$dir/gh-$1
  [[ -d $here ]] || die "there is no instance gh-$k"
  alive "$here/gatehouse.pid" || {
    say "gh-$k does not run"
    rm -f "$here/gatehouse.pid"
    return 0
  }
  # A draining instance answers its last requests first (http.drain_timeout_ms).
  stop_process "$here/gatehouse.pid" "$signal" 30
  say "gh-$k stopped ($signal)"
}

write_nginx_config() {
  local n=$1 k user_line=""
  # nginx's workers run as `user` only when its master is root; as root they
  # stay root, so they can write the temp folders inside the data folder.
  [[ $(id -u) -eq 0 ]] && user_line="user root;"
  {
    cat <<EOF
# Written by scripts/cluster.sh up; every path is inside the data folder.
$user_line
# One worker: a single round-robin order, so consecutive requests go to
# consecutive instances (several workers each keep their own order).
worker_processes 1;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/error.log notice;
events { worker_connections 1024; }

http {
  log_format upstream '\$remote_addr [\$time_local] "\$request" \$status -> \$upstream_addr \$upstream_status \$request_time';
  access_log $dir/nginx/access.log upstream;
  client_body_temp_path $dir/nginx/temp/client_body;
  proxy_temp_path $dir/nginx/temp/proxy;
  fastcgi_temp_path $dir/nginx/temp/fastcgi;
  uwsgi_temp_path $dir/nginx/temp/uwsgi;
  scgi_temp_path $dir/nginx/temp/scgi;

  # No stickiness: any request may reach any instance.
  upstream gatehouse {
EOF
    for ((k = 1; k <= n; k++)); do
      echo "    server 127.0.0.1:$(cat "$dir/gh-$k/port") max_fails=1 fail_timeout=5s;"
    done
    cat <<EOF
    keepalive 32;
    # Below the instances' http.idle_timeout_ms (120 s): nginx closes an idle
    # connection before the instance would, never sending on one being closed.
    keepalive_timeout 60s;
  }

  server {
    listen 127.0.0.1:$(cat "$dir/nginx/port");
    # limits.max_message_bytes of the instances (4 MiB); nginx's own default is 1 MiB.
    client_max_body_size 4m;

    location / {
      proxy_pass http://gatehouse;
      # Keep-alive to the instances.
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # The instances check Host (http.allowed_hosts) against DNS rebinding.
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      # SSE: every event goes out as the instance writes it.
      proxy_buffering off;
      proxy_cache off;
      # A tool call's answer may come only when the call ends, so nginx waits
      # longer than the longest tool (limits.tool_timeout_ms); listen streams
      # carry a comment every http.keepalive_ms (15 s).
      proxy_read_timeout ${read_timeout_s}s;
      proxy_send_timeout ${read_timeout_s}s;
      proxy_connect_timeout 2s;
      # Another instance gets the request only when this one could not take
      # it. Without non_idempotent, nginx never re-sends a POST it has begun
      # to send: that tool call may have run, and running it twice could
      # write twice. Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method,
      # Mcp-Name, Authorization and Last-Event-ID pass as they came.
      proxy_next_upstream error timeout;
      proxy_next_upstream_tries $n;
    }
  }
}
EOF
  } >"$dir/nginx/nginx.conf"
}

nginx_start() {
  "$nginx" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log" -t </dev/null >/dev/null 2>>"$dir/nginx/error.log" ||
    die "nginx refused its configuration; see $dir/nginx/error.log"
  "$nginx" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -e "$dir/nginx/error.log" </dev/null >/dev/null 2>>"$dir/nginx/error.log" ||
    die "nginx did not start (its port taken?); see $dir/nginx/error.log"
  until_ready nginx_listens || die "nginx did not start listening; see $dir/nginx/error.log"
  say "nginx at $(mcp_url) (pid $(cat "$dir/nginx/nginx.pid"))"
}

nginx_listens() {
  alive "$dir/nginx/nginx.pid" && (exec 3<>"/dev/tcp/127.0.0.1/$(cat "$dir/nginx/port")") 2>/dev/null
}

nginx_stop() {
  [[ -f $dir/nginx/nginx.pid ]] || return 0
  stop_process "$dir/nginx/nginx.pid" QUIT 10
  say "nginx stopped"
}

mcp_url() { echo "http://127.0.0.1:$(cat "$dir/nginx/port")/mcp"; }

instances() {
  local d
  for d in "$dir"/gh-*; do [[ -d $d ]] && echo "${d##*/gh-}"; done | sort -n
}

anything_alive() {
  local f
  for f in "$dir"/redis/redis.pid "$dir"/nginx/nginx.pid "$dir"/gh-*/gatehouse.pid; do
    alive "$f" && return 0
  done
  return 1
}

need_cluster() { [[ -f $dir/$marker ]] || die "no cluster in $dir (scripts/cluster.sh up)"; }
need_instance() {
  [[ $1 =~ ^[0-9]+$ && -d $dir/gh-$1 ]] || die "there is no instance gh-$1 in $dir"
}

up() {
  local n=${1:-3} k
  [[ $n =~ ^[0-9]+$ && $n -ge 1 ]] || die "up takes a number of instances, not '$n'"
  if [[ -e $dir ]]; then
    [[ -f $dir/$marker || -z $(ls -A "$dir") ]] || die "$dir exists and is not a cluster's folder; choose another GATEHOUSE_CLUSTER_DIR"
    anything_alive && die "the cluster in $dir still runs; scripts/cluster.sh down first"
    rm -rf "$dir"
  fi
  prepare
  plugins=${GATEHOUSE_CLUSTER_PLUGINS:-session.so memory.so sessions.so}
  server_name=${GATEHOUSE_CLUSTER_SERVER_NAME:-gatehouse}
  free_families=${GATEHOUSE_CLUSTER_FREE_FAMILIES:-session sessions memory}
  tool_timeout_ms=${GATEHOUSE_CLUSTER_TOOL_TIMEOUT_MS:-120000}
  rate_limits=${GATEHOUSE_CLUSTER_RATE_LIMITS:-}
  memory_database=${GATEHOUSE_CLUSTER_MEMORY_DATABASE:-}
  read_timeout_s=$((tool_timeout_ms / 1000 + 30))

  mkdir -p "$dir"/{redis,shared/conversations} "$dir"/nginx/temp
  touch "$dir/$marker"
  remember_tools
  (umask 077 && openssl rand -base64 32 >"$dir/state-key")
  free_port >"$dir/nginx/port"
  # Whatever fails from here stops what already started.
  trap 'say "up failed; stopping what started"; down >/dev/null 2>&1 || true' EXIT

  write_redis_config
  redis_start
  for ((k = 1; k <= n; k++)); do
    mkdir -p "$dir/gh-$k/data"
    write_instance_config "$k"
    instance_start "$k" 0
  done
  write_nginx_config "$n"
  nginx_start
  trap - EXIT
  echo "$n instances behind nginx; data in $dir"
  mcp_url
}

down() {
  local k
  [[ -d $dir ]] || return 0
  need_cluster
  # Each part on its own: one that fails to stop leaves the others stopped.
  nginx_stop || say "nginx did not stop cleanly"
  for k in $(instances); do instance_signal_stop "$k" TERM || say "gh-$k did not stop cleanly"; done
  redis_stop || say "Redis did not stop cleanly"
}

status() {
  local k f
  need_cluster
  report() { if alive "$2"; then echo "$1: runs (pid $(cat "$2"))$3"; else echo "$1: stopped$3"; fi; }
  report redis "$dir/redis/redis.pid" " unix://$dir/redis/redis.sock"
  for k in $(instances); do
    f=$dir/gh-$k/port
    report "gh-$k" "$dir/gh-$k/gatehouse.pid" " http://127.0.0.1:$(cat "$f" 2>/dev/null)/mcp"
  done
  report nginx "$dir/nginx/nginx.pid" " $(mcp_url)"
}

case ${1:-} in
up) up "${2:-3}" ;;
down) down ;;
status) status ;;
url) need_cluster && mcp_url ;;
kill | stop)
  need_cluster
  need_instance "${2:-}"
  instance_signal_stop "$2" "$([[ $1 == kill ]] && echo KILL || echo TERM)"
  ;;
start)
  need_cluster
  need_instance "${2:-}"
  recall_tools
  [[ -f $dir/gh-$2/port ]] || die "gh-$2 never ran, so it has no port"
  instance_start "$2" "$(cat "$dir/gh-$2/port")"
  ;;
reload)
  need_cluster
  for k in ${2:-$(instances)}; do
    need_instance "$k"
    alive "$dir/gh-$k/gatehouse.pid" || die "gh-$k does not run"
    kill -HUP "$(cat "$dir/gh-$k/gatehouse.pid")"
    say "gh-$k: SIGHUP (re-reads $dir/gh-$k/gatehouse.yaml)"
  done
  ;;
redis-stop) need_cluster && redis_stop ;;
redis-start)
  need_cluster
  recall_tools
  redis_start
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
