#!/usr/bin/env bash
# `buf breaking` for the protos: uncommitted proto changes are checked against HEAD, a clean tree
# against the previous commit. Service protos are contracts with grpc-js callers and bus consumers:
# fields and methods are added, deprecated, never renumbered or removed in place.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --verify --quiet HEAD~1 >/dev/null; then
  echo "proto-breaking: no previous commit to compare with (shallow clone); skipped"
  exit 0
fi
against=HEAD~1
if ! git diff --quiet HEAD -- proto/svc; then against=HEAD; fi
npx --no-install buf breaking proto --against ".git#ref=${against},subdir=proto"
echo "proto-breaking: no breaking change against ${against}"
