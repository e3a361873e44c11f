"""taplib.py - the TAP helpers the Python tests share (the counterpart of taplib.sh).

ok(cond, what) prints one numbered result; finish() prints the plan after the last one
and exits with status 1 when any check failed, 0 otherwise.
"""
import sys

_count = 0
_failed = False


def ok(cond, what):
    """Print "ok N - what" when cond holds, "not ok N - what" otherwise."""
    global _count, _failed
    _count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (_count, what))
    _failed = _failed or not cond


def finish():
    """Print the plan (1..N) and exit with the suite's status."""
    print("1..%d" % _count)
    sys.exit(1 if _failed else 0)
