#!/usr/bin/env python3
"""pytable.py prints the per-test table of a pytest run from its JUnit XML (--junitxml).

    pytable.py RUN.xml                      one run: TEST RESULT DETAIL, then the counts
    pytable.py samsa=A.xml kafka=B.xml      runs side by side; '*' marks a test whose
                                            result differs between the runs

Rows NAME[*] stand for a parametrized test whose parameters differ between the runs
(random ones): each run's outcomes and how many, e.g. PASSx100.
RESULT is PASS, FAIL (the test failed), ERROR (a fixture failed in setup or teardown; a
test that failed and whose teardown failed too counts as FAIL) or SKIP. DETAIL is the first
line of the failure or skip message, cut to 150 characters (single-run form only).
Used by kafka-python.sh and aiokafka.sh.
"""
import sys
import xml.etree.ElementTree as ET


def load(path):
    """load returns {test id: (result, detail)} in file order."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        # classname is package.module or package.module.Class: the pytest node id form.
        parts = cls.split(".") if cls else []
        mod = len(parts)
        while mod > 1 and parts[mod - 1][:1].isupper():
            mod -= 1
        tid = "::".join(["/".join(parts[:mod]) + ".py"] * bool(parts) + parts[mod:] + [name])
        result, detail = "PASS", ""
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is None:
                continue
            msg = (el.get("message") or el.text or "").strip().splitlines()
            msg = msg[0] if msg else ""
            if kind == "failure":
                result, detail = "FAIL", msg
                break
            if kind == "error":
                result, detail = "ERROR", msg
                break
            result, detail = "SKIP", msg
        prev = out.get(tid)
        # pytest writes a second <testcase> for a teardown error after a failed call.
        if prev and prev[0] == "FAIL":
            continue
        out[tid] = (result, detail[:150])
    return out


def counts(run):
    c = {"PASS": 0, "FAIL": 0, "ERROR": 0, "SKIP": 0}
    for r, _ in run.values():
        c[r] += 1
    return "%d passed, %d failed, %d errors, %d skipped" % (c["PASS"], c["FAIL"], c["ERROR"], c["SKIP"])


def main(args):
    if len(args) == 1 and "=" not in args[0]:
        run = load(args[0])
        width = max([len(t) for t in run] + [4])
        print("%-*s  %-6s %s" % (width, "TEST", "RESULT", "DETAIL"))
        for t, (r, d) in run.items():
            print(("%-*s  %-6s %s" % (width, t, r, d)).rstrip())
        print()
        print(counts(run))
        return 0
    runs = []
    for a in args:
        label, sep, path = a.partition("=")
        if not sep:
            sys.exit("usage: pytable.py RUN.xml | LABEL=RUN.xml LABEL=RUN.xml ...")
        runs.append((label, load(path)))
    # A parametrized test whose parameters are random (they differ from run to run) is one
    # row NAME[*] per function, with each run's outcomes and their count.
    totals = [(label, counts(run)) for label, run in runs]
    in_all = set.intersection(*(set(run) for _, run in runs))
    for i, (label, run) in enumerate(runs):
        grouped = {}
        for t, (r, d) in run.items():
            if t in in_all or "[" not in t:
                grouped[t] = (r, d)
                continue
            key = t[:t.index("[")] + "[*]"
            prev = grouped.get(key)
            grouped[key] = (None, (prev[1] if prev else []) + [r])
        for k, (r, d) in list(grouped.items()):
            if r is None:
                grouped[k] = ("/".join("%sx%d" % (o, d.count(o)) for o in sorted(set(d))), "")
        runs[i] = (label, grouped)
    tests = []
    for _, run in runs:
        tests += [t for t in run if t not in tests]
    width = max([len(t) for t in tests] + [4])
    print("%-*s   %s" % (width, "TEST", " ".join("%-6s" % l for l, _ in runs)))
    for t in tests:
        res = [run.get(t, ("-", ""))[0] for _, run in runs]
        mark = "*" if len(set(res)) > 1 else " "
        print("%-*s %s %s" % (width, t, mark, " ".join("%-6s" % r for r in res)))
    print()
    for label, total in totals:
        print("%s: %s" % (label, total))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
