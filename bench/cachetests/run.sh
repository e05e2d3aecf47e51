#!/bin/sh
# Runs the HTTP cache test suite (http-tests/cache-tests) against gale
# caching a proxy route in front of the suite's origin, and prints the
# suite's own verdicts (passes, required failures) and the tests that
# failed, by group.
#
#   bench/cachetests/run.sh [SUITE_DIR]     (default /work/shared/cache-tests)
#
# Ports are picked free; the results stay in $OUT (default a temp dir).
set -eu
SUITE=${1:-/work/shared/cache-tests}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$(mktemp -d)}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ORIGIN=$(free_port)
GALE=$(free_port)

go build -o "$OUT/gale" "$ROOT/cmd/gale"

# The suite's client imports undici for its interim-response tests, and
# the shared copy ships no node_modules: run a copy with it installed
# when the registry can be reached (else those tests fail in the harness).
if ! (cd "$SUITE" && node -e 'import("undici")' >/dev/null 2>&1); then
	mkdir -p "$OUT/suite"
	cp -r "$SUITE/." "$OUT/suite/"
	if (cd "$OUT/suite" && timeout 120 npm install --no-save --no-audit --no-fund undici >/dev/null 2>&1); then
		SUITE="$OUT/suite"
	else
		echo "undici could not be installed: the interim-response tests fail in the harness" >&2
	fi
fi
cat > "$OUT/gale.yaml" <<YAML
listen: ["127.0.0.1:$GALE"]
log: {level: warn}
routes:
  - path: /
    cache: {max_bytes: 64MiB}
    proxy: {to: ["127.0.0.1:$ORIGIN"], preserve_host: true}
YAML

cleanup() {
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null || true
	[ -n "${GPID:-}" ] && kill "$GPID" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

(cd "$SUITE" && npm_config_protocol=http npm_config_port=$ORIGIN npm_config_pidfile="$OUT/origin.pid" \
	exec node test-engine/server/server.mjs) >"$OUT/origin.log" 2>&1 &
SRV=$!
"$OUT/gale" serve -c "$OUT/gale.yaml" >"$OUT/gale.log" 2>&1 &
GPID=$!
for _ in $(seq 50); do
	if curl -s -o /dev/null "http://127.0.0.1:$ORIGIN/" && curl -s -o /dev/null "http://127.0.0.1:$GALE/"; then break; fi
	sleep 0.1
done

(cd "$SUITE" && npm_package_config_id= npm_config_base="http://127.0.0.1:$GALE" \
	timeout 600 node --no-warnings test-engine/cli.mjs) >"$OUT/results.json"
(cd "$SUITE" && node score.mjs "$OUT/results.json")
node "$ROOT/bench/cachetests/failing.mjs" "$SUITE" "$OUT/results.json"
echo "results: $OUT/results.json"
