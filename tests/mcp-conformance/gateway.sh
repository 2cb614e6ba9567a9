# shellcheck shell=bash
# Start and stop a real `dealer-gateway serve` for the external-peer checks.
# Sourced by scripts/mcp-conformance and scripts/mcp-python-client-check.
#
#   gateway_ensure_binary                      GATEWAY_BIN as given, else builds the debug binary
#   fixture_ensure_binary                      FIXTURE_BIN as given, else builds the conformance
#                                              fixture (feature conformance-fixture; docs/conformance.md)
#   gateway_start NAME [extra serve args...]   sets GW_URL (…/mcp), GW_BASE, GW_PID, GW_DIR
#   gateway_stop                               SIGTERM, expects a graceful exit within 15 s
#
# The server gets a private SQLite file with the bundled demo data and port 0; the port is
# read from the "listening on http://127.0.0.1:<port>/mcp" line it prints on stdout.

GW_PID=
GW_DIR=

gateway_ensure_binary() {
  if [[ -z "${GATEWAY_BIN:-}" ]]; then
    # Cheap when up to date; guarantees a standalone run never tests a stale binary.
    cargo build -q -p gateway --bin dealer-gateway || return 1
    GATEWAY_BIN=${CARGO_TARGET_DIR:-target}/debug/dealer-gateway
  fi
  if [[ ! -x "$GATEWAY_BIN" ]]; then
    echo "no gateway binary at $GATEWAY_BIN" >&2
    return 1
  fi
}

fixture_ensure_binary() {
  if [[ -z "${FIXTURE_BIN:-}" ]]; then
    # Its own binary: building it never rebuilds or overwrites dealer-gateway.
    cargo build -q -p gateway --features conformance-fixture --bin dealer-gateway-conformance-fixture || return 1
    FIXTURE_BIN=${CARGO_TARGET_DIR:-target}/debug/dealer-gateway-conformance-fixture
  fi
  if [[ ! -x "$FIXTURE_BIN" ]]; then
    echo "no conformance fixture binary at $FIXTURE_BIN" >&2
    return 1
  fi
}

gateway_start() {
  local name=$1
  shift
  GW_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dgw-$name.XXXXXX")
  "$GATEWAY_BIN" serve --listen 127.0.0.1:0 --database-url "sqlite://$GW_DIR/gw.sqlite" "$@" \
    >"$GW_DIR/stdout.log" 2>"$GW_DIR/stderr.log" &
  GW_PID=$!
  local line=
  for _ in $(seq 1 300); do
    line=$(grep -o -m 1 'listening on http://127\.0\.0\.1:[0-9]*/mcp' "$GW_DIR/stdout.log" || true)
    [[ -n "$line" ]] && break
    if ! kill -0 "$GW_PID" 2>/dev/null; then
      echo "gateway ($name) exited before listening; stdout/stderr:" >&2
      tail -n 40 "$GW_DIR/stdout.log" "$GW_DIR/stderr.log" >&2
      GW_PID=
      return 1
    fi
    sleep 0.1
  done
  if [[ -z "$line" ]]; then
    echo "gateway ($name) printed no 'listening on' line within 30 s" >&2
    tail -n 40 "$GW_DIR/stdout.log" "$GW_DIR/stderr.log" >&2
    gateway_stop || true
    return 1
  fi
  GW_URL=${line#listening on }
  GW_BASE=${GW_URL%/mcp}
  echo "gateway ($name, pid $GW_PID) at $GW_URL, logs in $GW_DIR" >&2
  local path code
  for path in /healthz /readyz; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$GW_BASE$path" || true)
    if [[ "$code" != 200 ]]; then
      echo "gateway ($name): GET $path answered $code, expected 200" >&2
      gateway_stop || true
      return 1
    fi
  done
}

gateway_stop() {
  [[ -n "$GW_PID" ]] || return 0
  local pid=$GW_PID rc=0
  GW_PID=
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "gateway (pid $pid) did not stop within 15 s of SIGTERM; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 1
  fi
  wait "$pid" 2>/dev/null || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "gateway (pid $pid) exited with status $rc after SIGTERM (expected 0); stderr tail:" >&2
    tail -n 20 "$GW_DIR/stderr.log" >&2 || true
    return 1
  fi
  [[ "${KEEP_GATEWAY_LOGS:-0}" == 1 ]] || rm -rf "$GW_DIR"
}
