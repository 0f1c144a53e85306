#!/usr/bin/env bash
# docs/METRICS.md is generated from the metrics table (worker/metrics/metrics_table.h)
# by gen_metrics_doc, so that the reference operators read names exactly what
# /metrics exports: fails when the committed file is not what the table gives.
set -euo pipefail

SRC=${AGG_SOURCE_DIR:?set AGG_SOURCE_DIR to the source tree}
BIN=${AGG_BINARY_DIR:?set AGG_BINARY_DIR to the build directory}
DOC=$SRC/docs/METRICS.md
TMP=$(mktemp)
trap 'rm -f "$TMP"' EXIT

"$BIN/gen_metrics_doc" >"$TMP"
if ! cmp -s "$DOC" "$TMP"; then
  echo "FAIL: docs/METRICS.md is stale: run \`gen_metrics_doc $DOC\` from the build directory" >&2
  diff -u "$DOC" "$TMP" >&2 || true
  exit 1
fi
echo "docs/METRICS.md is current"
