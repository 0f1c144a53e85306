"""The small runner the CLI-level Python tests share (tests/cli/test_*.py):
each check is a function; a failed `check` or a crash fails that function
only, so one run reports every problem, then a summary line. Exit status 1
when anything failed (ctest reads it)."""

results = []  # (name, ok, detail)


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def case(fn):
    try:
        fn()
        results.append((fn.__name__, True, ""))
    except Fail as e:
        results.append((fn.__name__, False, str(e)))
    except Exception as e:  # a crash in a check is a failure of that check, not of the run
        results.append((fn.__name__, False, "%s: %s" % (type(e).__name__, e)))


def report():
    """Prints one line per check and the summary; returns the exit status."""
    for name, ok, detail in results:
        print("%s - %s%s" % ("ok" if ok else "FAIL", name, "" if ok else ": " + detail))
    failed = sum(1 for _, ok, _ in results if not ok)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0
