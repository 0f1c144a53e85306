#!/usr/bin/env python3
"""Scenario 1: a generated stream with invalid lines. The stored documents
equal those of `replay --input` on the same stream, and every invalid line is
in the dead-letter topic, byte for byte, with its code and source headers."""
import collections

import harness as h


def scenario(s):
    stream = s.generate(*GEN_ARGS)
    expected, rejects = s.expected(stream)
    assert rejects, "the stream must contain invalid lines"
    s.produce(stream)
    w = s.start_worker("g1", [("batch.max_commands", "500")])
    s.wait_committed("g1", alive=[w])
    s.stop_worker(w)
    h.assert_same_documents(expected, s.stored())

    lines = open(stream, "rb").read().split(b"\n")
    want = collections.Counter((lines[r["line"] - 1].hex(), r["code"]) for r in rejects)
    dlq = s.dlq_messages()
    got = collections.Counter((m["value_hex"], m["headers"]["x-error-code"]) for m in dlq)
    assert got == want, f"dead-letter topic differs: missing {list((want - got).items())[:3]}, extra {list((got - want).items())[:3]}"
    for m in dlq:
        hd = m["headers"]
        assert hd["x-source-topic"] == s.topic, hd
        assert int(hd["x-source-partition"]) >= 0 and int(hd["x-source-offset"]) >= 0, hd
        assert hd["x-error-detail"], hd


GEN_ARGS = ["--seed", "11", "--count", "8000", "--assignments", "40", "--students", "30", "--invalid-rate", "0.02",
            "--duplicate-rate", "0.05", "--order", "shuffle"]

if __name__ == "__main__":
    h.main(scenario, "dlq")
