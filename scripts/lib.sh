# shellcheck shell=bash
# Shared helpers for scripts/bootstrap, scripts/stack and scripts/test.
# Source it; it defines functions and variables only and runs nothing.
#
# Everything downloaded or built lives in one cache directory outside the
# repository, so that a fresh clone, CI and every developer reuse the same
# jars and binaries and `git status` never shows them:
#
#   $AGG_CACHE_DIR/m2/                   Maven local repository
#   $AGG_CACHE_DIR/kafka-<ver>/libs/     broker jars (+ .complete marker)
#   $AGG_CACHE_DIR/kafka-tools-<ver>/libs/   command-line tools' jars (+ .complete marker)
#   $AGG_CACHE_DIR/mongo-java-server-<ver>/libs/   its jars (+ .complete marker)
#   $AGG_CACHE_DIR/go/{mod,build}/       Go module and build caches
#   $AGG_CACHE_DIR/bin/ferretdb-<ver>    FerretDB binary
#   $AGG_CACHE_DIR/librdkafka-<ver>/     librdkafka, static (+ .complete marker);
#   $AGG_CACHE_DIR/librdkafka            a link to it, CMakeLists.txt's default AGG_RDKAFKA_PREFIX
#   $AGG_CACHE_DIR/stack/                running stack: config, data, logs, pids
#   $AGG_CACHE_DIR/stack-secured/        its secured profile: the same, certificates, secrets

AGG_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AGG_CACHE_DIR="${AGG_CACHE_DIR:-$HOME/.cache/aggregator}"

# The one place FerretDB's version is pinned. v1 is the last line that runs
# on plain PostgreSQL (and SQLite) without the DocumentDB extension;
# v1.24.2 is its newest release.
AGG_FERRETDB_VERSION="v1.24.2"
# toxiproxy (network faults between the worker and its services in the
# integration tests); v2.5.0 is the newest the Go module proxy serves.
AGG_TOXIPROXY_VERSION="v2.5.0"

# librdkafka, built from Debian's own source package (its development
# suite's): Debian 12 ships 2.0.2, whose SCRAM final message Kafka 4.x
# refuses (fixed in 2.6.1). The version and the SHA-256 of the .dsc are
# pinned here; the .dsc's own checksums then vouch for the tarballs.
AGG_RDKAFKA_DEB_VERSION="2.14.2-1"
AGG_RDKAFKA_DSC_SHA256="fafd510fdb29c4cf7732e115a416d93a5a3af4a1b3bd2b0c7731042d653d85ee"
# The -dev packages its build links (TLS, SASL, compression, OIDC's HTTP);
# dpkg-source comes with build-essential (dpkg-dev).
AGG_RDKAFKA_BUILD_DEPS=(libssl-dev libsasl2-dev libzstd-dev liblz4-dev zlib1g-dev libcurl4-openssl-dev)

agg_log() { printf '%s\n' "$*" >&2; }
agg_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Kafka's version is pinned in scripts/kafka/pom.xml only; read it back.
agg_kafka_version() {
    sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$AGG_ROOT/scripts/kafka/pom.xml"
}

agg_kafka_libs() { echo "$AGG_CACHE_DIR/kafka-$(agg_kafka_version)/libs"; }

# mongo-java-server's version is pinned in its pom only, likewise.
agg_mjs_version() {
    sed -n 's:.*<mongo-java-server.version>\(.*\)</mongo-java-server.version>.*:\1:p' \
        "$AGG_ROOT/scripts/mongo-java-server/pom.xml"
}
agg_mjs_libs() { echo "$AGG_CACHE_DIR/mongo-java-server-$(agg_mjs_version)/libs"; }

# The bin directory of Debian's newest installed PostgreSQL server
# (/usr/lib/postgresql/<major>/bin: Debian keeps initdb and postgres off the
# PATH), or nothing.
agg_pg_bindir() {
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$d" ] && [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && echo "$d"
}
agg_ferretdb_bin() { echo "$AGG_CACHE_DIR/bin/ferretdb-$AGG_FERRETDB_VERSION"; }
agg_toxiproxy_bin() { echo "$AGG_CACHE_DIR/bin/toxiproxy-$AGG_TOXIPROXY_VERSION"; }

# Resolves the runtime dependencies of scripts/$2/pom.xml with Maven into
# the directory $3 of the cache (no-op when present); $1 names them in
# messages, $4 is a jar that must be there afterwards (a glob), and further
# arguments go to Maven. The .complete marker is written last, so an
# interrupted download is retried instead of leaving a half-filled
# classpath.
agg_maven_libs() {
    local what="$1" pom="$2" libs="$3" jar="$4"
    shift 4
    [ -f "$libs/.complete" ] && return 0
    command -v mvn >/dev/null || agg_die "mvn not found (Maven 3.8+ is required to fetch $what)"
    agg_log "bootstrap: resolving $what with Maven into $libs"
    rm -rf "$libs"
    mkdir -p "$libs" "$AGG_CACHE_DIR/m2"
    local log="$AGG_CACHE_DIR/$pom-maven.log"
    if ! mvn -B -q -Dstyle.color=never -f "$AGG_ROOT/scripts/$pom/pom.xml" "$@" \
            -Dmaven.repo.local="$AGG_CACHE_DIR/m2" \
            dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$libs" >"$log" 2>&1; then
        cat "$log" >&2
        agg_die "Maven could not resolve $what (log: $log)"
    fi
    compgen -G "$libs/$jar" >/dev/null || agg_die "$jar missing from $what after the Maven run (log: $log)"
    touch "$libs/.complete"
}

# The broker jars.
agg_install_kafka() {
    [ -f "$(agg_kafka_libs)/.complete" ] || command -v java >/dev/null ||
        agg_die "java not found (Java 17+ is required to run Kafka)"
    agg_maven_libs "the Kafka $(agg_kafka_version) jars" kafka "$(agg_kafka_libs)" 'kafka_2.13-*.jar'
}

agg_kafka_tools_libs() { echo "$AGG_CACHE_DIR/kafka-tools-$(agg_kafka_version)/libs"; }

# Kafka's command-line tools (kafka-acls.sh's AclCommand and the others of
# org.apache.kafka.tools), at the broker's version.
agg_install_kafka_tools() {
    agg_maven_libs "the Kafka $(agg_kafka_version) tools' jars" kafka-tools "$(agg_kafka_tools_libs)" \
        'kafka-tools-*.jar' -Dkafka.version="$(agg_kafka_version)"
}

# mongo-java-server's jars.
agg_install_mjs() {
    agg_maven_libs "the mongo-java-server $(agg_mjs_version) jars" mongo-java-server "$(agg_mjs_libs)" \
        'mongo-java-server-memory-backend-*.jar'
}

# Build FerretDB from its released Go module (no-op when present).
#
# Why not `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2`:
# that binary panics at start ("Invalid build/version/version.txt"), because
# FerretDB generates build/version/version.txt in its own release pipeline
# and the module archive ships without it. So: download the module, copy
# its source to the cache, write the version file its release task would
# write, and build that copy. Nothing of FerretDB enters this repository.
agg_install_ferretdb() {
    local bin
    bin="$(agg_ferretdb_bin)"
    [ -x "$bin" ] && return 0
    command -v go >/dev/null || agg_die "go not found (Go 1.24+ is required to build FerretDB)"
    agg_log "bootstrap: building FerretDB $AGG_FERRETDB_VERSION into $bin (first time only, about 1-2 minutes)"
    local log="$AGG_CACHE_DIR/ferretdb-build.log"
    local src="$AGG_CACHE_DIR/src/ferretdb-$AGG_FERRETDB_VERSION"
    mkdir -p "$AGG_CACHE_DIR/bin" "$AGG_CACHE_DIR/src" "$AGG_CACHE_DIR/go"
    (
        set -e
        export GOMODCACHE="$AGG_CACHE_DIR/go/mod" GOCACHE="$AGG_CACHE_DIR/go/build"
        export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
        cd "$AGG_CACHE_DIR"
        dir="$(go mod download -json "github.com/FerretDB/FerretDB@$AGG_FERRETDB_VERSION" |
               sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
        [ -d "$dir" ] || { echo "go mod download gave no source directory"; exit 1; }
        rm -rf "$src"
        cp -r "$dir" "$src"
        chmod -R u+w "$src"
        echo "$AGG_FERRETDB_VERSION" >"$src/build/version/version.txt"
        echo "source" >"$src/build/version/package.txt"
        cd "$src"
        go build -trimpath -o "$bin.tmp" ./cmd/ferretdb
        mv "$bin.tmp" "$bin"
        # Only the binary is needed from here on; the module and build
        # caches of FerretDB's dependencies are about 1 GB.
        cd "$AGG_CACHE_DIR"
        rm -rf "$src"
        go clean -modcache
        rm -rf "$GOCACHE"
    ) >"$log" 2>&1 || { cat "$log" >&2; agg_die "building FerretDB failed (log: $log)"; }
}

# Build the toxiproxy server from its Go module (no-op when present).
agg_install_toxiproxy() {
    local bin
    bin="$(agg_toxiproxy_bin)"
    [ -x "$bin" ] && return 0
    command -v go >/dev/null || agg_die "go not found (Go 1.24+ is required to build toxiproxy)"
    agg_log "bootstrap: building toxiproxy $AGG_TOXIPROXY_VERSION into $bin (first time only)"
    local log="$AGG_CACHE_DIR/toxiproxy-build.log"
    mkdir -p "$AGG_CACHE_DIR/bin" "$AGG_CACHE_DIR/go"
    (
        set -e
        export GOMODCACHE="$AGG_CACHE_DIR/go/mod" GOCACHE="$AGG_CACHE_DIR/go/build"
        export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
        export GOBIN="$AGG_CACHE_DIR/go/bin-toxiproxy"
        cd "$AGG_CACHE_DIR"
        go install "github.com/Shopify/toxiproxy/v2/cmd/server@$AGG_TOXIPROXY_VERSION"
        mv "$GOBIN/server" "$bin"
        rm -rf "$GOBIN"
        go clean -modcache
        rm -rf "$GOCACHE"
    ) >"$log" 2>&1 || { cat "$log" >&2; agg_die "building toxiproxy failed (log: $log)"; }
}

# The Debian mirror this machine's apt uses (AGG_DEBIAN_MIRROR overrides
# it): the first URI of a deb or deb-src source, deb822 (.sources) or
# one-line (.list), whose suites include the release's codename
# (/etc/os-release), so that a third-party repository is never taken.
agg_debian_mirror() {
    if [ -n "${AGG_DEBIAN_MIRROR:-}" ]; then echo "${AGG_DEBIAN_MIRROR%/}"; return 0; fi
    local codename uri
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
    [ -n "$codename" ] || return 1
    uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v c="$codename" '
        function flush() { if (types ~ /(^| )deb(-src)?( |$)/ && (" " suites " ") ~ (" " c " ") && uris != "" && out == "") { split(uris, u, " "); out = u[1] } types = suites = uris = "" }
        /^[[:space:]]*$/ { flush(); next }
        /^[Tt]ypes:/ { sub(/^[^:]*:[[:space:]]*/, ""); types = $0 }
        /^[Ss]uites:/ { sub(/^[^:]*:[[:space:]]*/, ""); suites = $0 }
        /^URIs:/ { sub(/^[^:]*:[[:space:]]*/, ""); uris = $0 }
        END { flush(); if (out != "") print out }')"
    if [ -z "$uri" ]; then
        uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk -v c="$codename" '
            $1 == "deb" || $1 == "deb-src" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                if ($(i + 1) == c) { print $i; exit } }')"
    fi
    [ -n "$uri" ] && echo "${uri%/}"
}

agg_rdkafka_prefix() { echo "$AGG_CACHE_DIR/librdkafka-$AGG_RDKAFKA_DEB_VERSION"; }

# Build librdkafka from Debian's source package into the cache, once: a
# static library with its CMake package (lib/cmake/RdKafka), and the link
# $AGG_CACHE_DIR/librdkafka to it, which CMakeLists.txt looks for. The
# .dsc, its orig and debian tarballs come from the mirror's pool; the .dsc
# is checked against its pinned SHA-256, the tarballs against the .dsc.
# dpkg-source unpacks them without Debian's patches: those serve Debian's
# own build (external cJSON and nanopb, regenerated OpenTelemetry sources)
# and break the CMake build, which uses the sources upstream ships.
agg_install_librdkafka() {
    local prefix link="$AGG_CACHE_DIR/librdkafka"
    prefix="$(agg_rdkafka_prefix)"
    if [ -f "$prefix/.complete" ]; then
        [ "$(readlink "$link" 2>/dev/null)" = "$(basename "$prefix")" ] || ln -sfn "$(basename "$prefix")" "$link"
        return 0
    fi
    command -v dpkg-source >/dev/null || agg_die "dpkg-source not found (dpkg-dev, with build-essential)"
    command -v curl >/dev/null || agg_die "curl not found"
    local mirror ver="${AGG_RDKAFKA_DEB_VERSION%-*}"
    mirror="$(agg_debian_mirror)" || agg_die "no Debian mirror in /etc/apt/sources.list* for this release (set AGG_DEBIAN_MIRROR)"
    agg_log "bootstrap: building librdkafka $AGG_RDKAFKA_DEB_VERSION (Debian's source package) into $prefix (first time only, about a minute)"
    local log="$AGG_CACHE_DIR/librdkafka-build.log"
    local work="$AGG_CACHE_DIR/src/librdkafka-$AGG_RDKAFKA_DEB_VERSION"
    mkdir -p "$AGG_CACHE_DIR/src"
    (
        set -e
        rm -rf "$work" "$prefix"
        mkdir -p "$work/dl"
        cd "$work/dl"
        pool="$mirror/pool/main/libr/librdkafka"
        dsc="librdkafka_$AGG_RDKAFKA_DEB_VERSION.dsc"
        echo "downloading $pool/$dsc"
        curl -fsS --retry 3 -o "$dsc" "$pool/$dsc"
        echo "$AGG_RDKAFKA_DSC_SHA256  $dsc" | sha256sum -c --strict
        # The Checksums-Sha256 lines of the .dsc: "sha256 size name".
        files="$(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on && NF == 3 { print $1 "  " $3 }' "$dsc")"
        [ -n "$files" ] || { echo "no Checksums-Sha256 in $dsc"; exit 1; }
        while read -r _ name; do
            echo "downloading $pool/$name"
            curl -fsS --retry 3 -o "$name" "$pool/$name"
        done <<<"$files"
        sha256sum -c --strict <<<"$files"
        dpkg-source --skip-patches -x "$dsc" "$work/src"
        cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
            -DRDKAFKA_BUILD_STATIC=ON -DRDKAFKA_BUILD_EXAMPLES=OFF -DRDKAFKA_BUILD_TESTS=OFF \
            -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
            -DWITH_SSL=ON -DWITH_SASL=ON -DWITH_ZSTD=ON -DWITH_ZLIB=ON -DWITH_CURL=ON -DENABLE_LZ4_EXT=ON
        cmake --build "$work/build"
        cmake --install "$work/build"
        grep -q "RD_KAFKA_VERSION" "$prefix/include/librdkafka/rdkafka.h"
        touch "$prefix/.complete"
        cd "$AGG_CACHE_DIR"
        rm -rf "$work"
    ) >"$log" 2>&1 || { cat "$log" >&2; agg_die "building librdkafka failed (log: $log)"; }
    ln -sfn "$(basename "$prefix")" "$link"
}

# Seconds since the epoch with decimals, for stage timings.
agg_now() { date +%s.%N; }
agg_elapsed() { awk -v a="$1" -v b="$(agg_now)" 'BEGIN { printf "%.1f", b - a }'; }
