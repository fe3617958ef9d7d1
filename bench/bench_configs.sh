# Sourced by the bench scripts: the host's configuration for each bench, in
# one place, so a profile runs the host exactly as the bench it explains.

# stdio_bench_yaml BUILD_DIR: the echo test family of that build alone, no gate.
stdio_bench_yaml() {
  cat <<YAML
log_level: warn
gate: false
plugins:
  - $1/tests/plugins/echo.so
YAML
}

# http_bench_yaml PORT PLUGIN_DIR DATA_DIR: the echo family over Streamable
# HTTP on loopback, two I/O threads.
http_bench_yaml() {
  cat <<YAML
plugin_dir: $2
data_dir: $3
log_level: warn
gate: false
plugins: [echo.so]
transports: [http]
http: {listen: "127.0.0.1:$1", max_connections: 2048, max_streams: 2048, threads: 2}
# Every connection's call may be inside the no-op plugin at once: the
# per-plugin cap (a guard against a stuck family) is lifted for the
# comparison, as the peers have none.
limits: {max_in_flight: 4096, max_in_flight_per_principal: 4096, max_in_flight_per_plugin: 1024}
YAML
}
