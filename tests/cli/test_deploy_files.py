#!/usr/bin/python3
"""Checks the deployment files in docker/ against each other, the worker and
the host tools, without a container engine or a cluster.

- every YAML file parses (and has no duplicate keys, which YAML parsers
  otherwise resolve silently to the last one);
- compose.yaml: services, dependencies, healthchecks, mounts, topics, and the
  worker's AGGREGATOR_* environment accepted by `aggregator config check`;
  `docker compose config` too when the compose client is installed;
- Dockerfile: stages, runtime packages covering every shared library the
  built binary needs and nothing else (dpkg -S on this Debian 12 host = the
  image's release), build packages exactly those CMakeLists.txt asks
  pkg-config for,
  user, port, healthcheck, entrypoint, and COPY sources present in the build
  context that .dockerignore leaves;
- healthcheck.sh against a throwaway HTTP server (200, 503, nothing listening);
- k8s/*.yaml: object shapes, probes, security context, the memory request
  against the live peak measured and the limit against the worst case the
  ConfigMap's bounds allow,
  ConfigMap INI accepted by `config check` with the Secret's files, the
  references between the objects (Service and PodMonitor to the pods and
  their port, ConfigMap and Secret names and keys, KEDA to the Deployment),
  replicas owned by KEDA alone, the config checksum annotation current;
- images: every base and service image pinned to a version;
- schemas, with what the validators ship (nothing is fetched): the
  Kubernetes objects against the Kubernetes schemas of kubernetes-validate
  (strict: unknown fields fail), compose.yaml against the Compose
  specification vendored in check-jsonschema. Neither ships a schema for
  KEDA's ScaledObject or the Prometheus Operator's PodMonitor: those are
  checked structurally only. Each validator is first shown a broken copy it
  must reject. Without the tool, its check says so and is skipped;
- aggregator.service: required settings, MemoryMax against the bounds of
  docker/aggregator.ini by the limit's rule, `systemd-analyze verify` and an
  exposure score of at most 2.0 from `systemd-analyze security`;
- the Debian package's maintainer scripts (packaging/deb), run with stubs of
  adduser, deluser and systemctl: the system user made once and removed by a
  purge, the unit never enabled or started, systemctl only where systemd
  runs (scripts/package installs the real package);
- the Dockerfile's build stage: the product alone (BUILD_TESTING=OFF, no
  Check), installed by the package's install rules.

Uses the Debian python3 (/usr/bin/python3) with python3-yaml, systemd's
systemd-analyze, and the two validators, found on PATH or in
$AGG_CACHE_DIR/pytools/bin: scripts/bootstrap installs them all.

Environment: AGG_SOURCE_DIR (repository), AGGREGATOR (built binary).
"""

import configparser
import hashlib
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

import yaml

SRC = os.environ.get("AGG_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
from checklist import Fail, case, check, report  # noqa: E402,F401
AGGREGATOR = os.environ.get("AGGREGATOR") or os.path.join(SRC, "build", "aggregator")
DOCKER = os.path.join(SRC, "docker")

# librdkafka is linked statically (scripts/bootstrap builds it): the image needs the libraries it links.
RUNTIME_LIBS = {"libmongoc-1.0-0", "libbson-1.0-0", "libmicrohttpd12", "libsasl2-2", "libcurl4"}
# Runtime packages that are not libraries of the binary, and why.
RUNTIME_EXTRA = {"ca-certificates"}  # TLS to brokers and MongoDB
# In debian:bookworm-slim already (Essential/required): no install needed.
SLIM_BASE = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libzstd1", "liblz4-1", "libssl3", "libcrypt1",
             "libselinux1", "libpcre2-8-0"}
KEDA_SASL = {"plaintext", "scram_sha256", "scram_sha512", "oauthbearer", "gssapi", "none"}

TMP = tempfile.mkdtemp(prefix="agg-deploy-test-")


# ---- YAML with duplicate keys refused --------------------------------------

class StrictLoader(yaml.SafeLoader):
    pass


def _strict_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, "duplicate key %r" % (key,), key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def load_yaml(path):
    with open(path) as f:
        return [d for d in yaml.load_all(f, Loader=StrictLoader) if d is not None]


def yaml_files():
    out = []
    for root, _, files in os.walk(DOCKER):
        out += [os.path.join(root, f) for f in files if f.endswith((".yaml", ".yml"))]
    return sorted(out)


# ---- the worker's own view of a configuration ------------------------------

def run(args, env=None, **kw):
    return subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                          **kw)


def base_env():
    # Only what a container would have: no AGGREGATOR_* from the caller.
    return {k: v for k, v in os.environ.items() if not k.startswith("AGGREGATOR_")}


def config_show(args, env=None):
    """`aggregator config check` then `show` with args; returns {section.key: value}."""
    env = env if env is not None else base_env()
    r = run([AGGREGATOR, "config", "check"] + args, env=env)
    check(r.returncode == 0, "aggregator config check %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                                          r.stderr.strip()))
    r = run([AGGREGATOR, "config", "show"] + args, env=env)
    check(r.returncode == 0, "config show failed: %s" % r.stderr.strip())
    cp = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"))
    cp.optionxform = str
    cp.read_string(r.stdout)
    return {"%s.%s" % (s, k): v for s in cp.sections() for k, v in cp.items(s)}


def parse_size(v):
    m = re.fullmatch(r"(\d+)\s*(GiB|G|MiB|M|KiB|K|Gi|Mi|Ki)?", str(v))
    check(m, "not a size: %r" % v)
    mult = {"GiB": 1 << 30, "G": 1 << 30, "Gi": 1 << 30, "MiB": 1 << 20, "M": 1 << 20, "Mi": 1 << 20,
            "KiB": 1 << 10, "K": 1 << 10, "Ki": 1 << 10, None: 1}[m.group(2)]
    return int(m.group(1)) * mult


def k8s_memory(v):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|K|M|G)?", str(v))
    check(m, "not a Kubernetes quantity: %r" % v)
    mult = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, None: 1}
    return int(m.group(1)) * mult[m.group(2)]


def k8s_cpu(v):
    s = str(v)
    return int(s[:-1]) / 1000 if s.endswith("m") else float(s)


def listen_port(listen):
    check(re.fullmatch(r".+:\d+", listen or ""), "metrics.listen %r is not host:port" % listen)
    return int(listen.rsplit(":", 1)[1])


# ---- .dockerignore (moby patternmatcher semantics, enough of them) ---------

def dockerignore_rules():
    rules = []
    with open(os.path.join(SRC, ".dockerignore")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            neg = line.startswith("!")
            pat = os.path.normpath(line[1:] if neg else line).lstrip("/")
            rx = ""
            i = 0
            while i < len(pat):
                if pat.startswith("**", i):
                    rx += ".*"
                    i += 2
                elif pat[i] == "*":
                    rx += "[^/]*"
                    i += 1
                elif pat[i] == "?":
                    rx += "[^/]"
                    i += 1
                else:
                    rx += re.escape(pat[i])
                    i += 1
            rules.append((re.compile(rx + r"\Z"), neg))
    return rules


def in_context(rel, rules):
    """True if the file rel (relative to the repo root) is sent to the build."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for rx, neg in rules:  # the last matching rule wins; a rule on a parent applies to its children
        if any(rx.match(p) for p in prefixes):
            excluded = not neg
    return not excluded


def files_under(rel):
    path = os.path.join(SRC, rel)
    if os.path.isfile(path):
        return [rel.rstrip("/")]
    out = []
    for root, _, files in os.walk(path):
        out += [os.path.relpath(os.path.join(root, f), SRC) for f in files]
    return out


# ---- Dockerfile -------------------------------------------------------------

def dockerfile_stages():
    """[(from_line, [(INSTRUCTION, args)])] with continuations joined."""
    lines, cur = [], ""
    with open(os.path.join(DOCKER, "Dockerfile")) as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if s.lstrip().startswith("#"):  # a comment inside a continuation
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            lines.append(cur + s)
            cur = ""
    stages = []
    for line in lines:
        word, _, rest = line.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append((rest.strip(), []))
        elif stages:
            stages[-1][1].append((word, rest.strip()))
    return stages


def apt_installs(instrs):
    pkgs = set()
    for word, args in instrs:
        if word != "RUN":
            continue
        for m in re.finditer(r"apt-get install ([^&;|]*)", args):
            pkgs |= {t for t in m.group(1).split() if not t.startswith("-")}
    return pkgs


def test_yaml_parses():
    files = yaml_files()
    check(len(files) >= 6, "expected compose.yaml and the k8s manifests, found %s" % files)
    for p in files:
        try:
            docs = load_yaml(p)
        except yaml.YAMLError as e:
            raise Fail("%s: %s" % (os.path.relpath(p, SRC), e))
        check(docs, "%s: empty" % p)


def compose():
    return load_yaml(os.path.join(DOCKER, "compose.yaml"))[0]


def compose_partitions(c):
    m = re.search(r"--partitions (\d+)", " ".join(map(str, c["services"]["topics"]["command"])))
    check(m, "topics job does not set --partitions")
    return int(m.group(1))


def test_compose_structure():
    c = compose()
    svcs = c.get("services", {})
    for name in ("kafka", "mongo", "worker", "topics", "producer"):
        check(name in svcs, "compose: no service %s" % name)
    for name, s in svcs.items():
        check("image" in s or "build" in s, "%s: neither image nor build" % name)
        for dep, spec in (s.get("depends_on") or {}).items():
            check(dep in svcs, "%s depends on unknown service %s" % (name, dep))
            cond = spec.get("condition")
            check(cond in ("service_started", "service_healthy", "service_completed_successfully"),
                  "%s: bad condition %r" % (name, cond))
            if cond == "service_healthy":
                check("healthcheck" in svcs[dep], "%s waits for %s healthy, which has no healthcheck" % (name, dep))
            if cond == "service_completed_successfully":
                check(str(svcs[dep].get("restart", "no")) == "no", "one-shot %s must not restart" % dep)
        for v in s.get("volumes") or []:
            src = v.split(":")[0] if isinstance(v, str) else v.get("source")
            if src.startswith((".", "/")):
                check(os.path.exists(os.path.normpath(os.path.join(DOCKER, src))),
                      "%s mounts %s, which does not exist" % (name, src))
            else:
                check(src in (c.get("volumes") or {}), "%s: volume %s not declared" % (name, src))
    w = svcs["worker"]
    check(w["build"]["context"] == ".." and w["build"]["dockerfile"] == "docker/Dockerfile",
          "worker must build docker/Dockerfile from the repository root")
    for dep in ("kafka", "mongo"):
        check(w["depends_on"][dep]["condition"] == "service_healthy", "worker must wait for %s healthy" % dep)
    check(w.get("read_only") is True, "worker should run with a read-only root filesystem")
    grace = str(w.get("stop_grace_period", "10s"))
    check(re.fullmatch(r"\d+s", grace) and int(grace[:-1]) >= 30, "worker stop_grace_period %s < 30s" % grace)
    # Restarts are bounded: a configuration error (exit 2) restarts too (compose cannot exempt an exit code),
    # and must end.
    check(re.fullmatch(r"on-failure:\d+", str(w.get("restart", ""))), "worker restart %r: want on-failure:N"
          % w.get("restart"))

    env = svcs["kafka"]["environment"]
    roles = set(env["KAFKA_PROCESS_ROLES"].split(","))
    check(roles == {"broker", "controller"}, "kafka: want one combined KRaft node, roles %s" % roles)
    check(env.get("CLUSTER_ID"), "kafka: the apache/kafka image needs CLUSTER_ID in KRaft mode")
    check(str(env["KAFKA_CONTROLLER_QUORUM_VOTERS"]).startswith("%s@kafka:" % env["KAFKA_NODE_ID"]),
          "kafka: the voter is not this node")
    check(str(env.get("KAFKA_AUTO_CREATE_TOPICS_ENABLE")) == "false", "kafka: topics should be created on purpose")


def test_compose_worker_config():
    c = compose()
    svcs = c["services"]
    w = svcs["worker"]
    env = base_env()
    wenv = w.get("environment") or {}
    check(all(k.startswith("AGGREGATOR_") for k in wenv), "worker env: only AGGREGATOR_* expected")
    env.update({k: str(v) for k, v in wenv.items()})
    cfg = config_show(["-c", os.path.join(DOCKER, "aggregator.ini")], env)

    # Brokers: the kafka service's PLAINTEXT listener.
    kenv = svcs["kafka"]["environment"]
    for b in cfg["kafka.brokers"].split(","):
        check(b in kenv["KAFKA_ADVERTISED_LISTENERS"], "broker %s is not advertised by kafka" % b)
    # Topics: created by the topics job; the producer writes to one of them.
    topics_cmd = " ".join(svcs["topics"]["command"])
    for t in cfg["kafka.topics"].split(",") + [cfg["kafka.dlq_topic"]]:
        check(re.search(r"\b%s\b" % re.escape(t), topics_cmd), "topic %s is not created by the topics job" % t)
    m = re.search(r"--topic (\S+)", " ".join(svcs["producer"]["command"]))
    check(m and m.group(1) in cfg["kafka.topics"].split(","), "producer does not write to kafka.topics")
    # MongoDB: a replica set, the same one the URI names, initiated by the healthcheck.
    cmd = svcs["mongo"]["command"]
    check("--replSet" in cmd, "mongo must run as a replica set (w: majority)")
    rs = cmd[cmd.index("--replSet") + 1]
    check("replicaSet=%s" % rs in cfg["store.uri"], "store.uri does not name replica set %s" % rs)
    check("mongo:27017" in cfg["store.uri"], "store.uri does not point at the mongo service")
    hc = " ".join(svcs["mongo"]["healthcheck"]["test"])
    check("rs.initiate" in hc and "'%s'" % rs in hc, "mongo healthcheck does not initiate %s" % rs)
    check(cfg["store.write_concern"] == "majority", "compose should show w: majority")
    # Metrics: published on the port the worker listens on.
    port = listen_port(cfg["metrics.listen"])
    check(cfg["metrics.listen"].startswith("0.0.0.0:"), "in a container metrics.listen must be 0.0.0.0:PORT")
    check(any(str(p).endswith(":%d" % port) for p in w.get("ports", [])), "worker does not publish port %d" % port)
    grace = str(w.get("stop_grace_period", "10s"))
    check(re.fullmatch(r"\d+s", grace), "stop_grace_period %s: seconds expected" % grace)
    check_shutdown_bound(cfg, int(grace[:-1]), "compose stop_grace_period")


def test_compose_cli():
    """`docker compose config` when the client has the compose plugin."""
    docker = shutil.which("docker")
    cmd = None
    if docker and run([docker, "compose", "version"]).returncode == 0:
        cmd = [docker, "compose"]
    elif shutil.which("docker-compose"):
        cmd = [shutil.which("docker-compose")]
    if cmd is None:
        print("note: no docker compose client here; compose.yaml checked structurally only")
        return
    r = run(cmd + ["-f", os.path.join(DOCKER, "compose.yaml"), "config", "-q"])
    check(r.returncode == 0, "docker compose config: %s" % r.stderr.strip())


def test_dockerfile():
    stages = dockerfile_stages()
    check(len(stages) >= 2, "want a multi-stage build")
    # One Debian point release for both stages, of the hosts' major release (the runtime packages are checked
    # against this host's: test_dockerfile_runtime_libraries).
    build_from = re.fullmatch(r"debian:(\d+)\.(\d+)\s+AS\s+build", stages[0][0], re.I)
    runtime_from = re.fullmatch(r"debian:(\d+)\.(\d+)-slim", stages[-1][0])
    check(build_from, "build stage: %s, want debian:MAJOR.POINT AS build" % stages[0][0])
    check(runtime_from, "runtime stage: %s, want debian:MAJOR.POINT-slim" % stages[-1][0])
    check(build_from.groups() == runtime_from.groups(), "the stages name different Debian releases: %s, %s"
          % (stages[0][0], stages[-1][0]))
    with open("/etc/debian_version") as f:
        host_major = f.read().strip().split(".")[0]
    check(build_from.group(1) == host_major, "the image is Debian %s, this host Debian %s: the runtime package "
          "names are checked against this host's" % (build_from.group(1), host_major))
    build, runtime = stages[0][1], stages[-1][1]
    rt_pkgs, build_pkgs = apt_installs(runtime), apt_installs(build)
    check(RUNTIME_LIBS <= rt_pkgs, "runtime stage misses %s" % (RUNTIME_LIBS - rt_pkgs))
    check(not [p for p in rt_pkgs if p.endswith("-dev") or p in ("build-essential", "cmake", "gcc")],
          "runtime stage installs build tools: %s" % rt_pkgs)
    for p in ("libmongoc-dev", "libbson-dev", "libmicrohttpd-dev", "cmake") + rdkafka_build_deps():
        check(p in build_pkgs, "build stage misses %s" % p)
    check("librdkafka-dev" not in build_pkgs, "the build stage installs librdkafka-dev: the image is to carry the "
          "librdkafka scripts/lib.sh builds, not the system's")
    script = " ".join(a for w, a in build if w == "RUN")
    check("agg_install_librdkafka" in script and "-DAGG_RDKAFKA_PREFIX=" in script,
          "the build stage does not build librdkafka with scripts/lib.sh and link it (AGG_RDKAFKA_PREFIX)")
    instr = {}
    for word, args in runtime:
        instr.setdefault(word, []).append(args)
    user = instr.get("USER", ["root"])[-1].split(":")[0]
    check(user.isdigit() and int(user) != 0, "runtime USER must be a non-root numeric uid, got %s" % user)
    check(instr.get("ENTRYPOINT") == ['["aggregator"]'], "ENTRYPOINT %s" % instr.get("ENTRYPOINT"))
    check(instr.get("CMD") == ['["run", "-c", "/etc/aggregator/aggregator.ini"]'], "CMD %s" % instr.get("CMD"))
    copies = [a.split() for a in instr.get("COPY", [])]
    dests = {c[-1]: c[-2] for c in copies}
    check(installed_files().get("/etc/aggregator/aggregator.ini") == "docker/aggregator.ini",
          "the image must carry docker/aggregator.ini as /etc/aggregator/aggregator.ini, from the install rules")
    check(installed_files().get("/usr/bin/aggregator") == "aggregator", "the image must carry /usr/bin/aggregator "
          "from the install rules (ENTRYPOINT runs it from PATH)")
    cfg = config_show(["-c", os.path.join(DOCKER, "aggregator.ini")])
    port = listen_port(cfg["metrics.listen"])
    check(instr.get("EXPOSE") == [str(port)], "EXPOSE %s, metrics.listen port %d" % (instr.get("EXPOSE"), port))
    hc = instr.get("HEALTHCHECK", [""])[-1]
    m = re.search(r'CMD \["([^"]+)"', hc)
    check(m and m.group(1) in dests and dests[m.group(1)] == "docker/healthcheck.sh",
          "HEALTHCHECK must run the copied docker/healthcheck.sh: %s" % hc)
    return user


def rdkafka_build_deps():
    """The -dev packages scripts/lib.sh's librdkafka build links (AGG_RDKAFKA_BUILD_DEPS)."""
    r = run(["bash", "-c", '. "$1/scripts/lib.sh" && echo "${AGG_RDKAFKA_BUILD_DEPS[@]}"', "_", SRC])
    check(r.returncode == 0 and r.stdout.split(), "scripts/lib.sh names no AGG_RDKAFKA_BUILD_DEPS: %s" % r.stderr)
    return tuple(r.stdout.split())


def cmake_product_rules():
    """CMakeLists.txt without the BUILD_TESTING block: what a product build runs."""
    with open(os.path.join(SRC, "CMakeLists.txt")) as f:
        text = f.read()
    return re.sub(r"^if\(BUILD_TESTING\)\n.*?^endif\(\)", "", text, flags=re.S | re.M)


def installed_files():
    """{absolute path in the image: source} for the files the runtime stage gets from the build stage's
    `cmake --install` (DESTDIR /out, prefix /usr, copied to /) and its own COPY lines."""
    stages = dockerfile_stages()
    build, runtime = stages[0][1], stages[-1][1]
    out = {}
    for word, args in runtime:
        parts = args.split()
        if word == "COPY" and not parts[0].startswith("--from="):
            out[parts[-1]] = parts[-2]
    if not any(w == "COPY" and a.split() == ["--from=build", "/out/", "/"] for w, a in runtime):
        return out
    script = " ".join(a for w, a in build if w == "RUN")
    if not (re.search(r"-DCMAKE_INSTALL_PREFIX=/usr\b", script) and "DESTDIR=/out cmake --install" in script):
        return out
    rules = cmake_product_rules()
    if re.search(r"^install\(TARGETS aggregator RUNTIME DESTINATION \$\{CMAKE_INSTALL_BINDIR\}\)", rules, re.M):
        out["/usr/bin/aggregator"] = "aggregator"
    conf = re.search(r'if\(CMAKE_INSTALL_FULL_SYSCONFDIR STREQUAL "/etc"\)\s+set\(AGG_CONF_DIR (\S+)\)', rules)
    # a rule of a component that a plain install takes (not EXCLUDE_FROM_ALL)
    for src in re.findall(r"^install\(FILES (\S+) DESTINATION \$\{AGG_CONF_DIR\}(?: COMPONENT \w+)?\)", rules, re.M):
        if conf:
            out[conf.group(1) + "/" + os.path.basename(src)] = src
    return out


def test_dockerfile_product_build():
    """The image builds the product alone (no Check, no test target) and installs it by the package's rules."""
    build = dockerfile_stages()[0][1]
    script = " ".join(a for w, a in build if w == "RUN")
    check("-DBUILD_TESTING=OFF" in script, "the build stage does not configure with -DBUILD_TESTING=OFF")
    check("check" not in apt_installs(build), "the build stage installs Check, which BUILD_TESTING=OFF does not need")
    check("--target" not in script, "the build stage builds chosen targets; BUILD_TESTING=OFF builds the product")
    rules = cmake_product_rules()
    check(not re.search(r"pkg_check_modules\(CHECK\b", rules), "CMakeLists.txt looks for Check outside BUILD_TESTING")
    files = installed_files()
    for path in ("/usr/bin/aggregator", "/etc/aggregator/aggregator.ini"):
        check(path in files, "the image does not get %s from the install rules: %s" % (path, sorted(files)))


def test_dockerfile_runtime_libraries():
    """Every shared library the binary needs comes from a runtime package."""
    out = run(["objdump", "-p", AGGREGATOR])
    check(out.returncode == 0, "objdump: %s" % out.stderr)
    needed = re.findall(r"NEEDED\s+(\S+)", out.stdout)
    check(needed, "no NEEDED entries in %s" % AGGREGATOR)
    rt_pkgs = apt_installs(dockerfile_stages()[-1][1])
    linked = set()
    for lib in needed:
        if re.match(r"lib(asan|ubsan|tsan|lsan)\.", lib):
            continue  # a sanitizer build; the image builds without
        r = run(["dpkg", "-S", "*/" + lib])
        check(r.returncode == 0, "no Debian package owns %s" % lib)
        owners = {line.split(":")[0] for line in r.stdout.splitlines() if ":" in line}
        check(owners & (rt_pkgs | SLIM_BASE), "%s comes from %s, not installed in the runtime stage" % (lib, owners))
        linked |= owners
    # ... and nothing else: every runtime package is a library the binary links.
    unused = rt_pkgs - linked - RUNTIME_EXTRA
    check(not unused, "the runtime stage installs %s, which the binary does not link" % sorted(unused))


def test_dockerfile_build_packages():
    """The build stage installs the -dev packages of the libraries CMakeLists.txt asks pkg-config for in a
    product build (BUILD_TESTING=OFF) and those of librdkafka's build (scripts/lib.sh), and no others
    (libinih-dev was installed for years, linked by nothing)."""
    modules = set(re.findall(r"pkg_check_modules\(\w+ REQUIRED IMPORTED_TARGET ([\w.+-]+)\)", cmake_product_rules()))
    check(modules, "no pkg_check_modules in CMakeLists.txt")
    build_pkgs = apt_installs(dockerfile_stages()[0][1])
    provided = set()
    rdkafka_deps = set(rdkafka_build_deps())
    for p in sorted(b for b in build_pkgs if (b.endswith("-dev") or b == "check") and b not in rdkafka_deps):
        r = run(["dpkg", "-L", p])
        pcs = {os.path.basename(line)[:-3] for line in r.stdout.splitlines() if line.endswith(".pc")}
        check(pcs & modules, "the build stage installs %s, which provides none of %s" % (p, sorted(modules)))
        provided |= pcs
    check(modules <= provided, "the build stage lacks the packages of %s" % sorted(modules - provided))


def test_build_context():
    rules = dockerignore_rules()
    for word, args in [i for _, instrs in dockerfile_stages() for i in instrs]:
        if word != "COPY" or "--from=" in args:
            continue
        for src in args.split()[:-1]:
            files = files_under(src)
            check(files, "COPY %s: nothing there" % src)
            left_out = [f for f in files if not in_context(f, rules)]
            check(not left_out, "COPY %s: excluded by .dockerignore: %s" % (src, left_out[:5]))
    # Everything the aggregator target compiles is copied into the build stage.
    build_copies = [a.split()[0] for w, a in dockerfile_stages()[0][1] if w == "COPY"]
    for need in ("CMakeLists.txt", "models/", "worker/", "man/"):
        check(need in build_copies, "build stage does not COPY %s" % need)
    # ... and every file its install rules install.
    build_sources = [src for w, a in dockerfile_stages()[0][1] if w == "COPY" for src in a.split()[:-1]]
    for rule in re.findall(r"^install\(FILES ([^)]*?) DESTINATION", cmake_product_rules(), re.M):
        for src in rule.split():
            if src.startswith("${"):
                continue  # written by the build
            check(any(src == c or (c.endswith("/") and src.startswith(c)) for c in build_sources),
                  "the install rules install %s, which the build stage does not COPY" % src)
    for junk in (".git/HEAD", "build/aggregator", "build-asan/CMakeCache.txt", "tests/unit/test_metrics.c"):
        check(not in_context(junk, rules), ".dockerignore lets %s into the context" % junk)


# ---- healthcheck.sh --------------------------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):
        ok = self.path == "/healthz" and _Handler.status == 200
        body = b"ok\n" if ok else b"main loop stalled: no heartbeat for 42.0 s\n" if self.path == "/healthz" else b"?\n"
        self.send_response(200 if ok else (404 if self.path != "/healthz" else _Handler.status))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the script may hang up once it has the status line

    def log_message(self, *a):
        pass


def test_healthcheck_script():
    script = os.path.join(DOCKER, "healthcheck.sh")
    check(os.access(script, os.X_OK), "docker/healthcheck.sh is not executable")
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        def hc(listen):
            env = base_env()
            env["AGGREGATOR_METRICS_LISTEN"] = listen
            return run(["/bin/bash", script], env=env)

        _Handler.status = 200
        r = hc("0.0.0.0:%d" % port)
        check(r.returncode == 0, "200 from /healthz should pass: %s" % r.stderr)
        r = hc("127.0.0.1:%d" % port)
        check(r.returncode == 0, "127.0.0.1 address should pass: %s" % r.stderr)
        _Handler.status = 503
        r = hc("0.0.0.0:%d" % port)
        check(r.returncode == 1, "503 from /healthz should fail, exit %d" % r.returncode)
        check("main loop stalled" in r.stderr, "the reason is not reported: %r" % r.stderr)
        r = hc("nonsense")
        check(r.returncode == 1, "a bad address should fail")
    finally:
        srv.shutdown()
        srv.server_close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    env = base_env()
    env["AGGREGATOR_METRICS_LISTEN"] = "0.0.0.0:%d" % free
    r = run(["/bin/bash", script], env=env)
    check(r.returncode == 1, "nothing listening should fail, exit %d" % r.returncode)


# ---- Kubernetes -------------------------------------------------------------

def metadata_blocks(node):
    """Every `metadata` mapping in an object, pod templates included."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "metadata" and isinstance(v, dict):
                yield v
            yield from metadata_blocks(v)
    elif isinstance(node, list):
        for v in node:
            yield from metadata_blocks(v)


def k8s_objects():
    objs = {}
    for p in sorted(os.listdir(os.path.join(DOCKER, "k8s"))):
        if not p.endswith((".yaml", ".yml")):
            continue
        for d in load_yaml(os.path.join(DOCKER, "k8s", p)):
            for f in ("apiVersion", "kind", "metadata"):
                check(f in d, "%s: a document without %s" % (p, f))
            check(d["metadata"].get("name"), "%s: %s without a name" % (p, d["kind"]))
            for md in metadata_blocks(d):
                for field in ("labels", "annotations"):
                    for k, v in (md.get(field) or {}).items():
                        check(isinstance(v, str), "%s %s: %s %s must be a string" % (p, d["kind"], field, k))
            check((d["kind"], d["metadata"]["name"]) not in objs, "duplicate %s %s" % (d["kind"], d["metadata"]["name"]))
            objs[(d["kind"], d["metadata"]["name"])] = d
    return objs


def one(objs, kind):
    found = [o for (k, _), o in objs.items() if k == kind]
    check(len(found) == 1, "want exactly one %s, found %d" % (kind, len(found)))
    return found[0]


def check_shutdown_bound(cfg, grace_s, what):
    """docs/GUARANTEES.md: a stop is bounded by shutdown.timeout_ms, below the orchestrator's grace period, with
    SHUTDOWN_MARGIN_MS left after it to leave the group and close the clients before a SIGKILL."""
    t = int(cfg["shutdown.timeout_ms"])
    check(0 < t and t + SHUTDOWN_MARGIN_MS <= grace_s * 1000,
          "shutdown.timeout_ms %d + %d ms margin exceeds %s (%ss)" % (t, SHUTDOWN_MARGIN_MS, what, grace_s))


SHUTDOWN_MARGIN_MS = 10000


def k8s_config(objs):
    """The ConfigMap INI as the worker sees it, with the Secret's files."""
    dep, cm, sec = one(objs, "Deployment"), one(objs, "ConfigMap"), one(objs, "Secret")
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in c["volumeMounts"]}
    args = c["args"]
    check(args[:2] == ["run", "-c"], "args %s" % args)
    cfg_dir, cfg_key = os.path.split(args[2])
    check(cfg_dir in mounts and mounts[cfg_dir].get("configMap", {}).get("name") == cm["metadata"]["name"],
          "%s is not the ConfigMap's mount" % cfg_dir)
    check(cfg_key in cm["data"], "ConfigMap has no key %s" % cfg_key)
    ini = os.path.join(TMP, cfg_key)
    with open(ini, "w") as f:
        f.write(cm["data"][cfg_key])
    secrets = dict(sec.get("stringData") or {})
    sets = []
    for line in cm["data"][cfg_key].splitlines():
        m = re.match(r"\s*([\w.]+_file)\s*=\s*(\S+)", line)
        if not m:
            continue
        key, path = m.groups()
        d, name = os.path.split(path)
        check(d in mounts and mounts[d].get("secret", {}).get("secretName") == sec["metadata"]["name"],
              "%s = %s is not in the Secret's mount" % (key, path))
        check(name in secrets, "the Secret has no key %s (for %s)" % (name, key))
        local = os.path.join(TMP, name)
        with open(local, "w") as f:
            f.write(secrets[name])
        section = re.findall(r"^\[(\w+)\]", cm["data"][cfg_key][:cm["data"][cfg_key].index(line)], re.M)[-1]
        sets += ["--set", "%s.%s=%s" % (section, key, local)]
    return config_show(["-c", ini] + sets), sets


def test_k8s_deployment():
    objs = k8s_objects()
    for kind in ("Deployment", "ConfigMap", "Secret", "PodDisruptionBudget", "ScaledObject"):
        one(objs, kind)
    dep = one(objs, "Deployment")
    spec = dep["spec"]
    pod_labels = spec["template"]["metadata"]["labels"]
    check(all(pod_labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items()),
          "selector does not match the pod labels")
    pod = spec["template"]["spec"]
    check(len(pod["containers"]) == 1, "one container expected")
    c = pod["containers"][0]
    cfg, _ = k8s_config(objs)
    port = listen_port(cfg["metrics.listen"])
    ports = {p.get("name"): p["containerPort"] for p in c["ports"]}
    check(port in ports.values(), "containerPort %s does not match metrics.listen port %d" % (ports, port))

    def probe(name, path):
        p = c.get(name)
        check(p and p.get("httpGet", {}).get("path") == path, "%s must GET %s" % (name, path))
        pp = p["httpGet"]["port"]
        check(ports.get(pp, pp) == port, "%s port %s is not the metrics port" % (name, pp))

    probe("livenessProbe", "/healthz")
    probe("readinessProbe", "/readyz")
    probe("startupProbe", "/healthz")

    res = c["resources"]
    for kind in ("requests", "limits"):
        check({"cpu", "memory"} <= set(res.get(kind, {})), "resources.%s needs cpu and memory" % kind)
    check(k8s_cpu(res["requests"]["cpu"]) <= k8s_cpu(res["limits"]["cpu"]), "cpu request > limit")
    mem_limit = k8s_memory(res["limits"]["memory"])
    check(k8s_memory(res["requests"]["memory"]) <= mem_limit, "memory request > limit")
    check_memory_sizing(cfg, k8s_memory(res["requests"]["memory"]), mem_limit)

    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    check(psc.get("runAsNonRoot") or csc.get("runAsNonRoot"), "runAsNonRoot")
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    check(str(uid) == test_dockerfile(), "runAsUser %s is not the image's USER" % uid)
    check(csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
    check(csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation")
    check(csc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities must drop ALL")
    check(pod.get("automountServiceAccountToken") is False, "the worker needs no API token")
    check(pod.get("enableServiceLinks") is False, "service links would inject AGGREGATOR_* variables")
    sec_vol = [v for v in pod["volumes"] if "secret" in v][0]["secret"]
    check(sec_vol.get("defaultMode") == 0o440 and psc.get("fsGroup") == uid,
          "secret files: mode 0440 and fsGroup = the worker's uid, so only it can read them")
    check(pod.get("terminationGracePeriodSeconds", 30) >= 30, "grace period too short to flush")
    check_shutdown_bound(cfg, pod.get("terminationGracePeriodSeconds", 30), "terminationGracePeriodSeconds")
    ru = spec.get("strategy", {}).get("rollingUpdate", {})
    check(ru.get("maxSurge") == 0, "a surged pod can be left without partitions (never ready) and stall the rollout")


# The worker's peak RSS in the terms of deployment.yaml's rule (docs/BENCHMARKS.md has the measurements): the
# request is the live peak plus 15%; the limit is the worst case the configured bounds allow plus 25%, where
# the worst case is the base (code, buffers, librdkafka's prefetch at its default) plus both byte bounds,
# batch.max_pending_bytes and cache.max_bytes, which count memory the same way and whose heap is within 1.1x
# of that count. Both within one 64 MiB step of the rule, so a figure left behind by a smaller configuration
# fails too.
RSS_LIVE_PEAK_MIB = 111  # a live backlog on 6 partitions at the default prefetch: 104-111 MiB
RSS_BASE_MIB = 115  # code, buffers and librdkafka's prefetch at its default (queued.min.messages 150,000)
RSS_PER_COUNTED_BYTE = 1.1  # RSS per byte the worker counts against batch.max_pending_bytes or cache.max_bytes
REQUEST_HEADROOM, LIMIT_HEADROOM, SIZING_SLACK_MIB = 1.15, 1.25, 64
PREFETCH_KEYS = ("kafka.rdkafka.queued.min.messages", "kafka.rdkafka.queued.max.messages.kbytes",
                 "kafka.rdkafka.fetch.max.bytes", "kafka.rdkafka.max.partition.fetch.bytes")


def worst_rss_mib(cfg):
    counted = parse_size(cfg["batch.max_pending_bytes"]) + parse_size(cfg["cache.max_bytes"])
    return RSS_BASE_MIB + RSS_PER_COUNTED_BYTE * counted / (1 << 20)


def check_memory_limit(cfg, limit, what):
    changed = [k for k in PREFETCH_KEYS if k in cfg]
    check(not changed, "the configuration sets %s: the memory figures were measured at librdkafka's prefetch "
          "defaults, measure again" % changed)
    want_lim = worst_rss_mib(cfg) * LIMIT_HEADROOM
    mib = limit / (1 << 20)
    check(want_lim <= mib <= want_lim + SIZING_SLACK_MIB,
          "%s %.0f MiB, the rule gives %.0f MiB (worst case %.1f MiB for batch.max_pending_bytes %s and "
          "cache.max_bytes %s, + 25%%)" % (what, mib, want_lim, worst_rss_mib(cfg), cfg["batch.max_pending_bytes"],
                                          cfg["cache.max_bytes"]))


def check_memory_sizing(cfg, request, limit):
    check_memory_limit(cfg, limit, "memory limit")
    want_req = RSS_LIVE_PEAK_MIB * REQUEST_HEADROOM
    check(want_req <= request / (1 << 20) <= want_req + SIZING_SLACK_MIB,
          "memory request %.0f MiB, the rule gives %.0f MiB (live peak %d MiB + 15%%)"
          % (request / (1 << 20), want_req, RSS_LIVE_PEAK_MIB))


def test_memory_sizing_rule():
    """The rule itself: the worst case of the ConfigMap's bounds is the 238.2 MiB deployment.yaml derives, and a
    larger byte bound, a larger prefetch or a smaller limit fails; the count of cached aggregates is no term."""
    cfg = {"batch.max_pending_bytes": "64MiB", "cache.max_aggregates": "20000", "cache.max_bytes": "48MiB"}
    check(abs(worst_rss_mib(cfg) - 238.2) < 0.1, "worst case of the configmap's bounds: %.1f MiB" % worst_rss_mib(cfg))
    check_memory_sizing(cfg, 128 << 20, 320 << 20)
    check_memory_sizing(dict(cfg, **{"cache.max_aggregates": "1000000"}), 128 << 20, 320 << 20)
    for bad, what in ((dict(cfg, **{"cache.max_bytes": "256MiB"}), "a cache of 256 MiB"),
                      (dict(cfg, **{"batch.max_pending_bytes": "128MiB"}), "128 MiB of pending changes"),
                      (dict(cfg, **{"kafka.rdkafka.queued.min.messages": "500000"}), "a larger prefetch")):
        try:
            check_memory_sizing(bad, 128 << 20, 320 << 20)
        except Fail:
            continue
        raise Fail("320Mi passed for %s" % what)
    for req, lim in ((64 << 20, 320 << 20), (128 << 20, 256 << 20), (128 << 20, 1 << 30)):
        try:
            check_memory_sizing(cfg, req, lim)
        except Fail:
            continue
        raise Fail("request %d MiB, limit %d MiB passed" % (req >> 20, lim >> 20))


def systemd_bytes(v):
    m = re.fullmatch(r"(\d+)([KMGT])?", v)
    check(m, "MemoryMax=%s is not bytes with K, M, G or T" % v)
    return int(m.group(1)) << {None: 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


def test_systemd_memory():
    """MemoryMax against the bounds of the configuration the unit runs (docker/aggregator.ini), by the rule
    deployment.yaml's limit follows."""
    cfg = config_show(["-c", os.path.join(DOCKER, "aggregator.ini")])
    check_memory_limit(cfg, systemd_bytes(unit()["Service"]["MemoryMax"][-1]), "MemoryMax")


def container_ports(dep):
    c = dep["spec"]["template"]["spec"]["containers"][0]
    return {p.get("name"): p["containerPort"] for p in c["ports"]}


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def test_k8s_service():
    objs = k8s_objects()
    svc, dep = one(objs, "Service"), one(objs, "Deployment")
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    spec = svc["spec"]
    check(selects(spec.get("selector"), pod_labels), "the Service's selector %s does not select the worker pods %s"
          % (spec.get("selector"), pod_labels))
    ports = container_ports(dep)
    cfg, _ = k8s_config(objs)
    metrics_port = listen_port(cfg["metrics.listen"])
    check(len(spec["ports"]) == 1, "one port, the metrics port")
    p = spec["ports"][0]
    target = p.get("targetPort", p["port"])
    check(ports.get(target, target) == metrics_port, "targetPort %s is not the container's metrics port %d"
          % (target, metrics_port))
    check(p.get("name") == "metrics", "the Service's port is named %r, not metrics" % p.get("name"))
    # Headless and publishing not-ready pods: the scrapers need every pod, a worker that is not ready above all.
    check(spec.get("clusterIP") == "None", "the Service should be headless (clusterIP: None)")
    check(spec.get("publishNotReadyAddresses") is True, "publishNotReadyAddresses: a worker that is not ready is "
          "the one to scrape")


def test_k8s_podmonitor():
    objs = k8s_objects()
    pm, dep, svc = one(objs, "PodMonitor"), one(objs, "Deployment"), one(objs, "Service")
    check(pm["apiVersion"] == "monitoring.coreos.com/v1", "PodMonitor apiVersion %s" % pm["apiVersion"])
    spec = pm["spec"]
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    sel = spec.get("selector", {})
    check(set(sel) == {"matchLabels"}, "PodMonitor selector: matchLabels only, got %s" % sorted(sel))
    check(selects(sel["matchLabels"], pod_labels), "the PodMonitor does not select the worker pods")
    check(selects(sel["matchLabels"], svc["spec"]["selector"]) and selects(svc["spec"]["selector"],
                                                                             sel["matchLabels"]),
          "the PodMonitor and the Service select different pods")
    check("namespaceSelector" not in spec, "the PodMonitor scrapes its own namespace, the Deployment's")
    ports = container_ports(dep)
    cfg, _ = k8s_config(objs)
    eps = spec.get("podMetricsEndpoints") or []
    check(len(eps) == 1, "one metrics endpoint")
    ep = eps[0]
    check(ep.get("port") in ports, "podMetricsEndpoints port %r names no container port (%s)"
          % (ep.get("port"), sorted(ports)))
    check(ports[ep["port"]] == listen_port(cfg["metrics.listen"]), "the PodMonitor's port is not metrics.listen's")
    check(ep["port"] == svc["spec"]["ports"][0]["name"], "the PodMonitor and the Service name different ports")
    check(ep.get("path", "/metrics") == "/metrics", "path %s" % ep.get("path"))
    interval = int(ep.get("interval", "30s").rstrip("s"))
    timeout = int(ep.get("scrapeTimeout", "10s").rstrip("s"))
    check(timeout <= interval, "scrapeTimeout %ds above the interval %ds" % (timeout, interval))
    # The job is named by a pod label; the alert rules select that job.
    job = pod_labels.get(spec.get("jobLabel"))
    check(job, "jobLabel %r is not a label of the pods" % spec.get("jobLabel"))
    alerts = os.path.join(DOCKER, "prometheus", "alerts.yaml")
    if os.path.exists(alerts):
        with open(alerts) as f:
            jobs = set(re.findall(r'job="([^"]+)"', f.read()))
        check(jobs == {job}, "the alert rules select job %s, the PodMonitor's job is %s" % (sorted(jobs), job))


def test_k8s_references():
    """Every ConfigMap and Secret the pods use exists, with the keys they name; nothing scrapes by annotation
    beside the PodMonitor (one target twice)."""
    objs = k8s_objects()
    dep = one(objs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    for v in pod.get("volumes", []):
        for kind, field, key in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
            if field not in v:
                continue
            obj = objs.get((kind, v[field][key]))
            check(obj, "volume %s: no %s %s" % (v["name"], kind, v[field][key]))
            keys = set(obj.get("data") or {}) | set(obj.get("stringData") or {})
            for item in v[field].get("items", []):
                check(item["key"] in keys, "volume %s: %s %s has no key %s" % (v["name"], kind, obj["metadata"]["name"],
                                                                               item["key"]))
    for c in pod["containers"]:
        for e in c.get("env", []):
            for ref, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                r = (e.get("valueFrom") or {}).get(ref)
                if r:
                    obj = objs.get((kind, r["name"]))
                    check(obj and r["key"] in (set(obj.get("data") or {}) | set(obj.get("stringData") or {})),
                          "env %s: no %s %s with key %s" % (e["name"], kind, r["name"], r["key"]))
        for e in c.get("envFrom", []):
            for ref, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                if ref in e:
                    check((kind, e[ref]["name"]) in objs, "envFrom: no %s %s" % (kind, e[ref]["name"]))
    annotations = dep["spec"]["template"]["metadata"].get("annotations") or {}
    check(not [k for k in annotations if k.startswith("prometheus.io/")],
          "prometheus.io/* annotations beside the PodMonitor: a Prometheus with both would scrape each pod twice")


def test_k8s_config_checksum():
    """The pod template carries the sha256 of configmap.yaml as committed: a configuration change rolls the pods."""
    dep = one(k8s_objects(), "Deployment")
    annotations = dep["spec"]["template"]["metadata"].get("annotations") or {}
    with open(os.path.join(DOCKER, "k8s", "configmap.yaml"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    got = annotations.get("checksum/config")
    check(got, "the pod template has no checksum/config annotation")
    check(got == want, "checksum/config is %s, configmap.yaml's sha256 is %s: put the new one in deployment.yaml"
          % (got, want))


# ---- images pinned ----------------------------------------------------------

def pinned(image):
    """A version tag (7.0.28, 12.11-slim, v2.5.0) or a digest; not a release name, a bare major or latest."""
    if re.search(r"@sha256:[0-9a-f]{64}$", image):
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and re.fullmatch(r"v?\d+\.\d+(\.\d+)*([-_][\w.-]+)?", tag) is not None


def test_images_pinned():
    for good in ("mongo:7.0.28", "debian:12.11-slim", "apache/kafka:4.1.1", "x@sha256:" + "0" * 64):
        check(pinned(good), "pinned() refuses %s" % good)
    for bad in ("mongo:7", "mongo", "debian:bookworm", "debian:bookworm-slim", "x:latest", "localhost:5000/x"):
        check(not pinned(bad), "pinned() takes %s" % bad)
    stages = dockerfile_stages()
    names = set()
    for from_line, _ in stages:
        parts = from_line.split()
        image = parts[0]
        if image not in names:  # FROM <earlier stage> is not a pull
            check(pinned(image), "Dockerfile: FROM %s is not pinned to a version" % image)
        if len(parts) == 3 and parts[1].upper() == "AS":
            names.add(parts[2])
    with open(os.path.join(DOCKER, "Dockerfile")) as f:
        syntax = re.search(r"^#\s*syntax=(\S+)", f.read(), re.M)
    check(not syntax or pinned(syntax.group(1)), "the Dockerfile frontend %s is not pinned" % (syntax and syntax.group(1)))
    c = compose()
    for name, svc in c["services"].items():
        if "build" in svc:
            continue  # built here; `image` is the name it is tagged with
        check(pinned(svc["image"]), "compose service %s: image %s is not pinned to a version" % (name, svc["image"]))
    kafka = {svc["image"] for svc in c["services"].values() if svc.get("image", "").startswith("apache/kafka:")}
    check(kafka == {"apache/kafka:%s" % kafka_version()}, "compose's Kafka images %s, the local stack runs %s"
          % (sorted(kafka), kafka_version()))
    for (kind, name), obj in k8s_objects().items():
        for c in ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers", []):
            check(pinned(c["image"]), "%s %s: image %s is not pinned to a version" % (kind, name, c["image"]))


def kafka_version():
    with open(os.path.join(SRC, "scripts", "kafka", "pom.xml")) as f:
        m = re.search(r"<kafka.version>([^<]+)</kafka.version>", f.read())
    check(m, "no kafka.version in scripts/kafka/pom.xml")
    return m.group(1)


# ---- schemas shipped by the validators --------------------------------------

def find_tool(name):
    """A validator on PATH, or where scripts/bootstrap installs it."""
    cache = os.environ.get("AGG_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "aggregator")
    local = os.path.join(cache, "pytools", "bin", name)
    return shutil.which(name) or (local if os.access(local, os.X_OK) else None)


def skip(what, tool):
    print("skip - %s: %s is not installed (scripts/bootstrap installs it), so no schema check" % (what, tool))


def test_schema_k8s():
    tool = find_tool("kubernetes-validate")
    if not tool:
        return skip("test_schema_k8s", "kubernetes-validate")
    # First a Deployment it must refuse: valid but for a misspelt field (strict mode).
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "broken"},
           "spec": {"replica": 2, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}},
                                 "spec": {"containers": [{"name": "c", "image": "c:1.0"}]}}}}
    bad_path = os.path.join(TMP, "broken-deployment.yaml")
    with open(bad_path, "w") as f:
        yaml.safe_dump(bad, f)
    r = run([tool, "--strict", bad_path])
    check(r.returncode != 0 and "replica" in r.stdout + r.stderr,
          "kubernetes-validate took a Deployment with an unknown field: %s" % (r.stdout + r.stderr).strip())
    files = sorted(os.path.join(DOCKER, "k8s", p) for p in os.listdir(os.path.join(DOCKER, "k8s"))
                   if p.endswith((".yaml", ".yml")))
    r = run([tool, "--strict"] + files)
    out = r.stdout + r.stderr
    check(r.returncode == 0, "kubernetes-validate: %s" % "; ".join(l for l in out.splitlines() if "ERROR" in l))
    passed = {m.lower() for m in re.findall(r"passed for resource (\S+)", out)}
    unschema = set(re.findall(r"Couldn't find schema for kind (\w+)", out))
    for (kind, name) in k8s_objects():
        if kind in unschema:
            continue
        check("%s/%s" % (kind.lower(), name.lower()) in passed,
              "kubernetes-validate did not pass %s %s: %s" % (kind, name, out.strip()))
    check(unschema <= {"ScaledObject", "TriggerAuthentication", "PodMonitor"},
          "no schema for %s" % sorted(unschema))
    ver = run([tool, "--version"]).stdout.strip()
    print("note: kubernetes-validate %s: %d objects against its Kubernetes schemas; %s checked structurally only "
          "(no schema shipped)" % (ver, len(passed), ", ".join(sorted(unschema))))


def test_schema_compose():
    tool = find_tool("check-jsonschema")
    if not tool:
        return skip("test_schema_compose", "check-jsonschema")
    c = compose()
    bad = dict(c, services=dict(c["services"], worker=dict(c["services"]["worker"], restart_policy="on-failure")))
    bad_path = os.path.join(TMP, "broken-compose.yaml")
    with open(bad_path, "w") as f:
        yaml.safe_dump(bad, f)
    args = [tool, "--builtin-schema", "vendor.compose-spec"]
    r = run(args + [bad_path])
    check(r.returncode != 0 and "restart_policy" in r.stdout + r.stderr,
          "check-jsonschema took a compose file with an unknown key: %s" % (r.stdout + r.stderr).strip())
    r = run(args + [os.path.join(DOCKER, "compose.yaml")])
    check(r.returncode == 0, "compose.yaml against the Compose specification: %s" % (r.stdout + r.stderr).strip())


def test_k8s_secret_and_config():
    objs = k8s_objects()
    sec = one(objs, "Secret")
    check("data" not in sec or not sec["data"], "placeholders belong in stringData")
    for k in ("mongodb-uri", "kafka-password"):
        check("CHANGE-ME" in sec["stringData"][k], "Secret %s must stay a placeholder in the repository" % k)
    cfg, sets = k8s_config(objs)
    check(len(sets) >= 4, "store.uri and the SASL password should come from secret files")
    check(cfg["store.write_concern"] == "majority", "production writes with w: majority")
    r = run([AGGREGATOR, "config", "show", "-c", os.path.join(TMP, "aggregator.ini")] + sets, env=base_env())
    check(r.returncode == 0 and "CHANGE-ME" not in r.stdout, "config show prints a secret from the Secret's files")


def test_k8s_pdb():
    objs = k8s_objects()
    pdb, dep = one(objs, "PodDisruptionBudget"), one(objs, "Deployment")
    labels = dep["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in pdb["spec"]["selector"]["matchLabels"].items()),
          "PDB selector does not select the worker pods")
    check(pdb["spec"].get("maxUnavailable") == 1, "one voluntary disruption at a time")


def test_k8s_keda():
    objs = k8s_objects()
    so, dep = one(objs, "ScaledObject"), one(objs, "Deployment")
    check(so["apiVersion"] == "keda.sh/v1alpha1", "ScaledObject apiVersion")
    spec = so["spec"]
    check(spec["scaleTargetRef"]["name"] == dep["metadata"]["name"], "scaleTargetRef is not the Deployment")
    cfg, _ = k8s_config(objs)
    trig = [t for t in spec["triggers"] if t["type"] == "kafka"]
    check(len(trig) == 1, "one kafka trigger expected")
    md = trig[0]["metadata"]
    for k, v in md.items():
        check(isinstance(v, str), "trigger metadata %s must be a string (KEDA reads a string map)" % k)
    check(md["consumerGroup"] == cfg["kafka.group"], "consumerGroup is not kafka.group")
    check(md["topic"] in cfg["kafka.topics"].split(","), "topic is not in kafka.topics")
    check(md["bootstrapServers"] == cfg["kafka.brokers"], "bootstrapServers is not kafka.brokers")
    check(md.get("allowIdleConsumers", "false") == "false", "replicas beyond the partitions would idle")
    check(int(md["lagThreshold"]) > 0, "lagThreshold")
    parts = compose_partitions(compose())
    check(spec["maxReplicaCount"] == parts,
          "maxReplicaCount %s should equal the partitions (%d)" % (spec["maxReplicaCount"], parts))
    check(1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"], "1 <= minReplicaCount <= maxReplicaCount")
    # KEDA owns the replica count: a `replicas` in the Deployment would be put back by every apply.
    check("replicas" not in dep["spec"], "the Deployment sets replicas: %s beside KEDA's %d-%d; one owner only"
          % (dep["spec"].get("replicas"), spec["minReplicaCount"], spec["maxReplicaCount"]))
    check(spec["scaleTargetRef"].get("kind", "Deployment") == "Deployment", "scaleTargetRef kind")
    auth = objs.get(("TriggerAuthentication", trig[0]["authenticationRef"]["name"]))
    check(auth, "authenticationRef names no TriggerAuthentication")
    sec = one(objs, "Secret")
    params = {}
    for ref in auth["spec"]["secretTargetRef"]:
        check(ref["name"] == sec["metadata"]["name"] and ref["key"] in sec["stringData"],
              "TriggerAuthentication refers to %s/%s, not in the Secret" % (ref["name"], ref["key"]))
        params[ref["parameter"]] = sec["stringData"][ref["key"]]
    check(params.get("sasl") in KEDA_SASL, "KEDA sasl %r" % params.get("sasl"))
    mech = re.sub(r"sha-(\d+)", r"sha\1", cfg.get("kafka.rdkafka.sasl.mechanisms", "").lower()).replace("-", "_")
    check(params["sasl"] == mech, "KEDA sasl %s but the worker uses %s" % (params["sasl"], mech))
    check((params.get("tls") == "enable") == ("SSL" in cfg.get("kafka.rdkafka.security.protocol", "")),
          "KEDA tls does not match kafka.rdkafka.security.protocol")
    check(params.get("username") == cfg.get("kafka.rdkafka.sasl.username"), "KEDA username is not the worker's")


# ---- systemd ----------------------------------------------------------------

def unit():
    sections, cur = {}, None
    with open(os.path.join(DOCKER, "aggregator.service")) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                cur = sections.setdefault(line.strip("[]"), {})
                continue
            k, _, v = line.partition("=")
            cur.setdefault(k.strip(), []).append(v.strip())
    return sections


def test_systemd_unit():
    s = unit()
    svc = s["Service"]
    get = lambda k: svc.get(k, [""])[-1]
    check(re.fullmatch(r"/\S*/aggregator run -c /etc/aggregator/aggregator.ini", get("ExecStart")),
          "ExecStart %s" % get("ExecStart"))
    check(get("ExecReload") == "/bin/kill -HUP $MAINPID", "ExecReload must send SIGHUP")
    check(get("Restart") == "on-failure", "Restart=on-failure")
    check("2" in get("RestartPreventExitStatus").split(), "a configuration error (exit 2) should not restart")
    m = re.fullmatch(r"(\d+)s?", get("TimeoutStopSec"))
    check(m and int(m.group(1)) >= 60, "TimeoutStopSec must leave time to flush")
    for k, v in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("KillSignal", "SIGTERM")):
        check(get(k) == v, "%s=%s" % (k, v))
    check("multi-user.target" in s["Install"]["WantedBy"], "WantedBy")
    # The credential the environment points at is the one loaded.
    creds = dict(c.split(":", 1) for c in svc.get("LoadCredential", []))
    env = dict(e.split("=", 1) for e in svc.get("Environment", []))
    check(all(k.startswith("AGGREGATOR_") or k == "MONGOC_DISABLE_SHM" for k in env),
          "Environment: AGGREGATOR_* (and MONGOC_DISABLE_SHM) only")
    check(env.get("MONGOC_DISABLE_SHM") == "1", "MONGOC_DISABLE_SHM=1: no stale /dev/shm segments")
    for k, v in env.items():
        if k.endswith("_FILE"):
            check(v.startswith("%d/") and v[3:] in creds, "%s=%s is not a loaded credential" % (k, v))
    # And the worker accepts that environment.
    cenv = base_env()
    for k, v in env.items():
        if v.startswith("%d/"):
            v = os.path.join(TMP, v[3:])
            with open(v, "w") as f:
                f.write("mongodb://aggregator:CHANGE-ME@db1.example:27017/?replicaSet=rs0")
        cenv[k] = v
    config_show(["-c", os.path.join(DOCKER, "aggregator.ini")], cenv)


def test_systemd_analyze():
    sa = shutil.which("systemd-analyze")
    check(sa, "systemd-analyze not found (Debian package systemd; scripts/bootstrap installs it)")
    path = os.path.join(TMP, "aggregator.service")
    with open(os.path.join(DOCKER, "aggregator.service")) as f:
        text = f.read()
    # verify checks that ExecStart exists: point it at the built binary.
    with open(path, "w") as f:
        f.write(re.sub(r"^ExecStart=\S+", "ExecStart=" + AGGREGATOR, text, flags=re.M))
    r = run([sa, "verify", path], cwd=TMP)
    noise = [l for l in (r.stdout + r.stderr).splitlines() if "aggregator.service" in l]
    check(r.returncode == 0 and not noise, "systemd-analyze verify: %s" % (noise or r.stderr))
    r = run([sa, "security", "--offline=true", "--threshold=20", path], cwd=TMP)
    m = re.search(r"Overall exposure level for \S+: ([\d.]+)", r.stdout + r.stderr)
    check(r.returncode == 0, "exposure above 2.0: %s" % (m.group(1) if m else r.stderr.strip()))


# ---- the Debian package's maintainer scripts ---------------------------------

def run_maintainer_script(name, arg, user_exists):
    """Runs packaging/deb/NAME ARG with adduser, deluser, delgroup, getent and systemctl replaced by stubs
    that log their arguments; returns (exit status, [logged calls])."""
    stubs = os.path.join(TMP, "stubs")
    os.makedirs(stubs, exist_ok=True)
    log = os.path.join(TMP, "calls.log")
    for tool in ("adduser", "deluser", "delgroup", "systemctl", "deb-systemd-helper", "deb-systemd-invoke"):
        with open(os.path.join(stubs, tool), "w") as f:
            f.write('#!/bin/sh\necho "%s $*" >>"%s"\n' % (tool, log))
        os.chmod(os.path.join(stubs, tool), 0o755)
    with open(os.path.join(stubs, "getent"), "w") as f:
        f.write('#!/bin/sh\n[ "%s" = yes ] && echo "$2:x:999:999::/nonexistent:/usr/sbin/nologin"\n'
                '[ "%s" = yes ]\n' % ("yes" if user_exists else "no", "yes" if user_exists else "no"))
    os.chmod(os.path.join(stubs, "getent"), 0o755)
    if os.path.exists(log):
        os.remove(log)
    env = dict(base_env(), PATH=stubs + ":/usr/bin:/bin")
    r = run(["/bin/sh", "-e", os.path.join(SRC, "packaging", "deb", name)] + arg.split(), env=env)
    calls = open(log).read().splitlines() if os.path.exists(log) else []
    return r.returncode, calls


def test_deb_maintainer_scripts():
    """The postinst makes the system user once and never enables or starts the unit (an upgrade restarts it
    only if it runs: try-restart); the prerm stops it on removal; a purge removes the user; systemctl is only
    called where systemd runs the machine."""
    systemd = os.path.isdir("/run/systemd/system")
    for name in ("postinst", "prerm", "postrm"):
        path = os.path.join(SRC, "packaging", "deb", name)
        check(os.access(path, os.X_OK), "packaging/deb/%s is not executable" % name)
        with open(path) as f:
            text = f.read()
        for line in text.splitlines():
            if "systemctl" in line and not line.lstrip().startswith("#"):
                check(not re.search(r"(?<![\w-])(enable|start|restart|unmask)\b", line),
                      "packaging/deb/%s enables or starts the unit: %s" % (name, line.strip()))
        check("/run/systemd/system" in text or "systemctl" not in text,
              "packaging/deb/%s calls systemctl without checking that systemd runs the machine" % name)
    rc, calls = run_maintainer_script("postinst", "configure", user_exists=False)
    check(rc == 0, "postinst configure exited %d" % rc)
    adds = [c for c in calls if c.startswith("adduser ")]
    check(len(adds) == 1 and "--system" in adds[0].split() and adds[0].split()[-1] == "aggregator",
          "postinst configure should add the system user aggregator once: %s" % calls)
    check(all(c in ("systemctl --system daemon-reload",) for c in calls if c.startswith("systemctl")),
          "postinst: %s" % calls)
    check(systemd or not [c for c in calls if c.startswith("systemctl")],
          "postinst calls systemctl where systemd does not run: %s" % calls)
    rc, calls = run_maintainer_script("postinst", "configure", user_exists=True)
    check(rc == 0 and not [c for c in calls if c.startswith("adduser")], "postinst re-adds an existing user: %s" % calls)
    rc, calls = run_maintainer_script("postinst", "configure 0.1.0", user_exists=True)
    check(rc == 0 and all(c in ("systemctl --system daemon-reload", "systemctl --system try-restart aggregator.service")
                          for c in calls), "postinst of an upgrade: %s" % calls)
    check(systemd == ("systemctl --system try-restart aggregator.service" in calls),
          "an upgrade should try-restart the unit exactly where systemd runs: %s" % calls)
    rc, calls = run_maintainer_script("prerm", "remove", user_exists=True)
    check(rc == 0 and all(c == "systemctl --system stop aggregator.service" for c in calls),
          "prerm remove: %s" % calls)
    check(systemd == bool(calls), "prerm remove should stop the unit exactly where systemd runs: %s" % calls)
    rc, calls = run_maintainer_script("postrm", "remove", user_exists=True)
    check(rc == 0 and not [c for c in calls if c.startswith(("deluser", "delgroup"))],
          "postrm remove removes the user (a purge does): %s" % calls)
    rc, calls = run_maintainer_script("postrm", "purge", user_exists=True)
    check(rc == 0 and [c for c in calls if c.startswith("deluser --system") and c.endswith(" aggregator")],
          "postrm purge should remove the user aggregator: %s" % calls)


def main():
    check_bin = os.access(AGGREGATOR, os.X_OK)
    if not check_bin:
        print("FAIL - setup: %s is not an executable (set AGGREGATOR)" % AGGREGATOR)
        print("0 passed, 1 failed")
        return 1
    for fn in (test_yaml_parses, test_compose_structure, test_compose_worker_config, test_compose_cli,
               test_dockerfile, test_dockerfile_product_build, test_dockerfile_runtime_libraries,
               test_dockerfile_build_packages, test_build_context,
               test_healthcheck_script,
               test_k8s_deployment, test_memory_sizing_rule, test_k8s_service, test_k8s_podmonitor,
               test_k8s_references, test_k8s_config_checksum, test_k8s_secret_and_config, test_k8s_pdb, test_k8s_keda,
               test_images_pinned, test_schema_k8s, test_schema_compose, test_systemd_unit, test_systemd_memory,
               test_systemd_analyze, test_deb_maintainer_scripts):
        case(fn)
    shutil.rmtree(TMP, ignore_errors=True)
    return report()


if __name__ == "__main__":
    sys.exit(main())
