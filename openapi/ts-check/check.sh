#!/usr/bin/env bash
# check.sh: CI's check of openapi/openapi.json (.ci/run runs it; run it by
# hand the same way). With the versions pinned in package.json and
# package-lock.json (npm ci):
#   1. redocly lint (recommended-strict: any warning fails);
#   2. ajv: every golden JSON body of testdata/golden against its schemas
#      (goldens.json), the bodies TestOpenAPISamples (proxy) writes under
#      each compatibility switch, and wire's golden bodies (the CRM
#      pass-through ones too, with unknown elements) against theirs;
#   3. openapi-typescript generates the types, tsc --strict compiles demo.ts
#      (an openapi-fetch client), and node runs it on golden and compat
#      bodies, then against listingproxy itself (built, and run on the
#      embedded demo data of config.yaml): lists, a single property, the
#      errors sent with 200, a 401, and /openapi.json, which must be this
#      file.
# Needs node >= 18.17 (Debian bookworm's nodejs is 18.20) and npm. Fails on
# any error.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)

node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a < 18 || (a === 18 && b < 17)) { console.error("node " + process.versions.node + " is too old: @redocly/cli 1.34 needs >= 18.17"); process.exit(1) }'
echo "node $(node --version), npm $(npm --version)"
npm ci --no-audit --no-fund --loglevel=error
echo "redocly $(npx --no-install redocly --version), openapi-typescript $(npx --no-install openapi-typescript --version 2>/dev/null | tail -1), $(npx --no-install tsc --version)"

echo "-- redocly lint"
npx --no-install redocly lint --config redocly.yaml ../openapi.json

echo "-- schemas against golden and compatibility-switch bodies (ajv)"
samples=$(mktemp -d) run=$(mktemp -d) lp=
# On exit, stop listingproxy and wait for it (it drains for drain_delay).
trap '[ -z "$lp" ] || { kill $lp 2>/dev/null; wait $lp 2>/dev/null; }; rm -rf "$samples" "$run"' EXIT
(cd "$root" && LISTINGPROXY_OPENAPI_SAMPLES="$samples" go test -count=1 -run '^TestOpenAPISamples$' ./proxy)
node validate.mjs "$root/testdata/golden" "$samples" "$root/wire/testdata" "$root/wire/testdata/legacy"

echo "-- TypeScript client: generate, compile (--strict), read demo lists"
rm -rf generated
npx --no-install openapi-typescript ../openapi.json -o generated/listing-api.ts
npx --no-install tsc -p tsconfig.json --noEmit --strict
npx --no-install tsc -p tsconfig.json
g=$root/testdata/golden
node generated/out/demo.js "$g/properties-full-prices.json" "$g/agents-full.json"
node generated/out/demo.js "$g/errors-several.json" "$g/agents-short.json"
node generated/out/demo.js "$samples/PropertyListResponse.all-full-one.json" "$samples/AgentListResponse.all-full-one.json"

echo "-- the same client against a running listingproxy (config.yaml: the embedded demo data)"
(cd "$root" && go build -o "$run/listingproxy" ./cmd/listingproxy)
(cd "$run" && exec ./listingproxy serve -config "$root/config.yaml" -listen 127.0.0.1:0 -admin-listen off >log 2>&1) &
lp=$!
url=
for _ in $(seq 1 300); do # up to 30 s: it seeds the demo database first
  url=$(grep -o '"msg":"listening","addr":"http://[^"]*"' "$run/log" | head -1 | sed 's/.*"addr":"//; s/"$//') || true
  [ -n "$url" ] && break
  kill -0 $lp 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then cat "$run/log"; echo "listingproxy did not start"; exit 1; fi
node generated/out/demo.js --live "$url"
echo "OpenAPI checks passed"
