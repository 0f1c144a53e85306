#!/usr/bin/env bash
# `aggregator --version` (or -V) names the build: the version, the commit it was
# built from, and the librdkafka, libmongoc and libbson versions it runs with.
# Env: AGGREGATOR (the binary), AGG_SOURCE_DIR.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SRC="${AGG_SOURCE_DIR:?AGG_SOURCE_DIR must name the source tree}"

"$BIN" --version >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] || fail "--version exited $rc"
[ -s "$T/err" ] && fail "--version wrote to stderr: $(cat "$T/err")"
[ "$(sed -n 's/^\([a-z]*\) .*/\1/p' "$T/out" | tr '\n' ' ')" = "aggregator commit librdkafka libmongoc libbson " ] \
  || fail "--version lines are not aggregator, commit, librdkafka, libmongoc, libbson: $(cat "$T/out")"
field() { sed -n "s/^$1 //p" "$T/out"; }

version="$(sed -n 's/^project(aggregator VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")"
[ "$(field aggregator)" = "$version" ] || fail "version '$(field aggregator)', CMakeLists.txt says '$version'"

# The commit: "unknown" only when the sources are not a git checkout;
# otherwise git describe's, naming a commit of this repository.
commit="$(field commit)"
if [ -e "$SRC/.git" ] && command -v git >/dev/null; then
  hash="$(printf '%s' "$commit" | sed -E 's/-dirty$//; s/^.*-g([0-9a-f]+)$/\1/')"
  if ! printf '%s' "$hash" | grep -qE '^[0-9a-f]{7,40}$' && ! git -C "$SRC" rev-parse -q --verify "refs/tags/$hash" >/dev/null; then
    fail "commit '$commit' is not git describe's"
  elif ! git -C "$SRC" cat-file -e "$hash^{commit}" 2>/dev/null; then
    fail "commit '$commit' names no commit of $SRC"
  fi
else
  [ "$commit" = unknown ] || fail "outside git the commit is '$commit', expected unknown"
fi

# librdkafka: the version it was built against (CMakeLists.txt caches it),
# which a static link keeps at run time; scripts/bootstrap's build is the
# one scripts/lib.sh pins, 2.12 or later (SCRAM on Kafka 4.x needs 2.6.1).
v="$(field librdkafka)"
cache="${AGG_BINARY_DIR:-}/CMakeCache.txt"
if [ -f "$cache" ]; then
  built="$(sed -n 's/^AGG_RDKAFKA_VERSION:INTERNAL=//p' "$cache")"
  [ "$v" = "$built" ] || fail "librdkafka runs as $v, built against '$built'"
  if [ "$(sed -n 's/^AGG_RDKAFKA_SOURCE:INTERNAL=//p' "$cache")" = bootstrap ]; then
    pinned="$(bash -c '. "$1/scripts/lib.sh" && echo "${AGG_RDKAFKA_DEB_VERSION%-*}"' _ "$SRC")"
    [ "$v" = "$pinned" ] || fail "librdkafka $v, scripts/lib.sh pins $pinned"
    [ "$(printf '%s\n' 2.12.0 "$v" | sort -V | head -1)" = 2.12.0 ] || fail "librdkafka $v is older than 2.12"
  fi
fi

# The other libraries: what they say at run time, which is what pkg-config
# built against unless one was upgraded since.
for lib in librdkafka:- libmongoc:libmongoc-1.0 libbson:libbson-1.0; do
  name="${lib%%:*}" pc="${lib#*:}"
  v="$(field "$name")"
  printf '%s' "$v" | grep -qE '^[0-9]+\.[0-9]+\.[0-9]+' || fail "$name version '$v' is not a version"
  if [ "$pc" != - ] && command -v pkg-config >/dev/null && built="$(pkg-config --modversion "$pc" 2>/dev/null)"; then
    [ "$v" = "$built" ] || fail "$name runs as $v, built against $built"
  fi
done

# -V is --version: the same lines, the same status.
"$BIN" -V >"$T/short" 2>"$T/err"
rc=$?
[ "$rc" = 0 ] || fail "-V exited $rc"
[ -s "$T/err" ] && fail "-V wrote to stderr: $(cat "$T/err")"
cmp -s "$T/short" "$T/out" || fail "-V differs from --version: $(cat "$T/short")"

finish "--version"
