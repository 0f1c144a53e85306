#!/usr/bin/env python3
"""A lost broker costs no worker its partitions (docs/OPERATIONS.md, Kafka
down), on the 3-broker profile (scripts/stack start-cluster: replication
factor 3, min.insync.replicas 2) with the plain stack's store. Three
scenarios, each under a steady stream, with three workers of the default
group protocol announcing change events:

- rolling: every broker in turn stopped (a controlled shutdown) and started
  again, the next one once it is back;
- coordinator: the broker holding the group's coordinator killed (SIGKILL),
  then started again once the group has committed without it;
- leader: the broker leading partition 0 of the command topic killed for
  good (started again only when the scenario is over, for the next run).

Each ends with: every worker holding its partitions throughout (no
"partitions lost", no revocation after the group first split), nothing read
twice (the workers' consumed commands, from their "stopped" lines, sum to the
stream), every worker exiting 0 on SIGTERM, the store equal to `aggregator
replay --input` of the stream and to the fold of the change events. Each
step waits for the event it needs (the brokers' readiness, committed
offsets), never for a time. Arguments name the scenarios to run (all by
default)."""
# cluster: stops and kills the brokers of the 3-broker profile
import os
import subprocess
import sys
import time

os.environ["AGG_KAFKA_BROKERS"] = os.environ.get(
    "AGG_CLUSTER_BROKERS", "127.0.0.1:19392,127.0.0.1:19394,127.0.0.1:19396")
import harness as h  # noqa: E402

COUNT = 45000
RATE = 1500
WORKERS = 3


def cluster(*args):
    subprocess.run([h.STACK, *args], check=True)


def coordinator(s, g):
    for line in h.run([h.tool("kafka_tool"), "group", h.BROKERS, s.group(g)]).splitlines():
        if line.startswith("coordinator "):
            return int(line.split()[1])
    raise AssertionError("the group has no coordinator")


def leader(s, partition):
    for line in h.run([h.tool("kafka_tool"), "leaders", h.BROKERS, s.topic]).splitlines():
        p, broker = map(int, line.split())
        if p == partition:
            return broker
    raise AssertionError(f"partition {partition} has no leader")


def consumed(s, w):
    e = s.log_events(w, "stopped")
    assert e, f"no 'stopped' line:\n{s.worker_log(w)[-2000:]}"
    return int(e[-1]["applied"]) + int(e[-1]["stale"])


def run_scenario(name, fault):
    with h.scenario(f"cluster-{name}") as s:
        changes = s.create_topic("changes")
        stream = s.generate("--seed", "83", "--count", str(COUNT), "--assignments", "150", "--students", "30",
                            "--order", "time")
        expected, _ = s.expected(stream)
        producer = s.produce_async(stream, rate=RATE)
        workers = [s.start_worker("g", [("changes.topic", changes)]) for _ in range(WORKERS)]
        everything = {f"{s.topic}:{p}" for p in range(6)}

        def split():
            # Balanced (two each), not only covered: the brokers' assignor may go
            # on moving partitions after the first full cover, and those moves
            # belong to the joins, not to the fault.
            held = [s.holdings(w) for w in workers]
            for w in workers:
                s.assert_alive(w, "before the fault")
            return all(len(x) == 6 // WORKERS for x in held) and set().union(*held) == everything

        h.wait_until(split, 180, lambda: f"the group never split: {[sorted(s.holdings(w)) for w in workers]}")
        settled = [len(s.log_events(w, "partitions revoked")) for w in workers]
        h.wait_until(lambda: (s.committed_total("g") or 0) > 0, 120, "the group committed nothing before the fault")
        assert producer.poll() is None, "the stream ended before the fault: raise COUNT"
        t0 = time.time()
        fault(s)
        h.log(f"{name}: fault over in {time.time() - t0:.1f}s")
        assert producer.wait(600) == 0, "the producer failed"
        s.wait_committed("g", timeout=600, alive=workers)
        for w in workers:
            s.stop_worker(w)
        for i, w in enumerate(workers):
            assert not s.log_events(w, "partitions lost"), f"worker {i} lost partitions:\n{s.worker_log(w)[-3000:]}"
            revoked = s.log_events(w, "partitions revoked")
            # Its revocations up to the split, and its leave at the stop.
            assert len(revoked) <= settled[i] + 1, f"worker {i} gave partitions up during the fault: {revoked}"
        total = sum(consumed(s, w) for w in workers)
        assert total == COUNT, f"the workers consumed {total} commands of a stream of {COUNT}: {total - COUNT} twice"
        stored = s.stored()
        h.assert_same_documents(expected, stored)
        h.assert_fold_equals_store(h.change_events(s, changes), stored)
        h.log(f"{name}: {COUNT} commands, each consumed once; {len(stored)} documents equal to replay --input")


def rolling(s):
    for n in (1, 2, 3):
        cluster("cluster-stop", str(n))
        cluster("cluster-start", str(n))


def coordinator_killed(s):
    n = coordinator(s, "g")
    before = s.committed_total("g") or 0
    t0 = time.time()
    cluster("cluster-kill", str(n))
    h.wait_until(lambda: (s.committed_total("g") or 0) > before, 180,
                 f"the group committed nothing after its coordinator's broker {n} was killed")
    h.log(f"coordinator: the group committed again {time.time() - t0:.1f}s after broker {n} was killed")
    cluster("cluster-start", str(n))


def leader_killed(s):
    n = leader(s, 0)
    before = s.committed_total("g") or 0
    cluster("cluster-kill", str(n))
    h.wait_until(lambda: leader(s, 0) not in (n, -1), 180, f"partition 0 has no leader but broker {n}")
    h.wait_until(lambda: (s.committed_total("g") or 0) > before, 180,
                 f"the group committed nothing after broker {n}, partition 0's leader, was killed")
    leader_killed.dead = n


def main():
    st = subprocess.run([h.STACK, "status-cluster"], capture_output=True, text=True)
    assert st.returncode == 0, f"the 3-broker profile is not running (scripts/stack start-cluster):\n{st.stdout}"
    t0 = time.time()
    chosen = sys.argv[1:] or ["rolling", "coordinator", "leader"]
    faults = {"rolling": rolling, "coordinator": coordinator_killed, "leader": leader_killed}
    try:
        for name in chosen:
            run_scenario(name, faults[name])
    finally:
        dead = getattr(leader_killed, "dead", None)
        if dead:
            cluster("cluster-start", str(dead))
    h.log(f"cluster_brokers: passed in {time.time() - t0:.1f}s")
    sys.exit(0)


if __name__ == "__main__":
    main()
