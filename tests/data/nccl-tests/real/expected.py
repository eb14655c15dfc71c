#!/usr/bin/env python3
"""Writes expected/<log>.json for every corpus log, independently of baton's parser.

What each log says was read by hand (MANIFEST below: which collective each run names, where a
run starts, which launcher prefix to strip, the column layout, how the run ended). The rows are
then read from the printed table with nothing but str.split on those hand-given rules, so a
parser bug cannot make its own expectation. Standard library only.

    python3 tests/data/nccl-tests/real/expected.py     # rewrites expected/*.json
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Column layouts: the fields before the two (time, algbw, busbw, wrong) halves.
LAYOUTS = {
    "modern": ["size", "count", "type", "redop", "root"],  # nccl-tests >= 2.11 (#wrong)
    "noroot": ["size", "count", "type", "redop"],  # older: `error` column, no root
    "noredop": ["size", "count", "type"],  # NCCL 2.6 era: neither redop nor root
    "root-noredop": ["size", "count", "type", "root"],  # old broadcast/reduce tables
}

TAG = r"\s*\[\d+,\d+\]<std(?:out|err)>:"
SRUN = r"\s*\d+: "
SKY = r"\([\w-]+, rank=\d+, pid=\d+(?:, ip=[\d.]+)?\) "

# file: runs (start line, collective or None, status, min errors), layout, prefix, error column,
# refusal (substring of the message when the log does not say what ran) and the --collective
# hint that makes it ingestible. A run's rows are the table lines from its start line to the next
# run's start line.
MANIFEST = {
    "cscs-gh200-srun-2.18.txt": dict(runs=[(1, "all_reduce", "completed", 0)]),
    "gb10-all-gather-two-runs.txt": dict(
        runs=[(1, "all_gather", "completed", 0), (42, "all_gather", "completed", 0)]
    ),
    "oci-a100-10g-no-start-line.txt": dict(runs=[(1, "all_reduce", "completed", 0)]),
    "eks-p5-tag-output-one-row.txt": dict(
        runs=[(1, None, "completed", 0)], prefix=TAG, hint="all_reduce"
    ),
    "h100-single-node-no-program.txt": dict(
        runs=[(1, None, "completed", 0)], hint="all_reduce"
    ),
    "h100-srun-l-c0-two-nodes.txt": dict(
        runs=[(1, None, "completed", 0)], prefix=SRUN, hint="all_reduce"
    ),
    "rtx3090-wrong-108-failed.txt": dict(
        runs=[(1, None, "completed", 2)], hint="all_reduce"
    ),
    "rtx3090-three-ranks-connect-qp.txt": dict(
        runs=[(1, None, "partial", 2)], hint="all_reduce"
    ),
    "rtx3090-one-rank-avg-bus-0.txt": dict(
        runs=[(1, None, "completed", 0)], hint="all_reduce"
    ),
    "nccl-tests-78-nccl-2.8-error-col-c0.txt": dict(
        runs=[(1, "all_reduce", "partial", 1)], layout="noroot", wrong="maxerr"
    ),
    "nccl-tests-11-nvprof-cuda-failure.txt": dict(runs=[(1, "all_reduce", "error", 1)]),
    "nccl-tests-5-nccl1-nccl-failure.txt": dict(runs=[(1, "all_reduce", "error", 1)]),
    "nccl-tests-322-failure-after-rows.txt": dict(
        runs=[(1, None, "error", 4)], hint="all_reduce"
    ),
    "rccl-tests-50-mi210-failure-before-table.txt": dict(
        runs=[(1, "all_reduce", "error", 1)]
    ),
    "eks-indented-tag-output-zero-rows.txt": dict(
        runs=[(1, "all_reduce", "completed", 0)], prefix=TAG
    ),
    "eks-blueprints-elided-rows.txt": dict(
        runs=[(1, None, "completed", 0)], prefix=TAG, hint="all_reduce"
    ),
    "skypilot-3217-prefixed-header.txt": dict(
        runs=[(1, None, "partial", 1)], prefix=SKY, hint="all_reduce", refuse="no table rows"
    ),
    "nccl-tests-82-broadcast-old-no-redop.txt": dict(
        runs=[(1, "broadcast", "partial", 1)], layout="root-noredop", wrong="maxerr"
    ),
    "aks-30-rows-after-nccl-info.txt": dict(
        runs=[(1, None, "partial", 1)], hint="all_reduce"
    ),
    "aws-k8s-tester-503-p5-tagged-rows.txt": dict(
        runs=[(1, None, "partial", 1)], prefix=TAG, hint="all_reduce"
    ),
    "nccl-1530-4090-tree-command-line.txt": dict(runs=[(1, "all_reduce", "partial", 1)]),
    "nccl-tests-287-5090-cut-short.txt": dict(runs=[(1, "all_reduce", "partial", 1)]),
    "nccl-1039-v100-pcie.txt": dict(runs=[(1, "all_reduce", "partial", 1)]),
    "soperator-428-srun-perf-mpi.txt": dict(runs=[(1, "all_reduce", "partial", 1)]),
    "rocm-container-toolkit-77-rccl-version-line.txt": dict(
        runs=[(1, "all_reduce", "partial", 1)]
    ),
    "rccl-2075-broadcast-concluded-only.txt": dict(runs=[(1, "broadcast", "completed", 0)]),
    "mooncake-3484-rows-only.txt": dict(runs=[(1, None, "partial", 1)], hint="all_reduce"),
    "mscclpp-507-table-no-header.txt": dict(
        runs=[(1, None, "partial", 1)], hint="all_reduce"
    ),
    "rccl-1352-side-by-side.txt": dict(
        runs=[(1, None, None, 0)], refuse="not an nccl-tests log"
    ),
    "nccl-tests-107-non-mpi-duplicate-rank0.txt": dict(
        runs=[(1, "all_reduce", "error", 1)], layout="noroot", wrong="maxerr"
    ),
    "nccl-tests-355-cuda-failure-inside-row.txt": dict(runs=[(1, "alltoall", "error", 1)]),
    "h200-2.19.7-failed-then-passed.txt": dict(
        runs=[(1, "all_reduce", "error", 1), (22, "all_reduce", "partial", 1)]
    ),
    "h100-cuda-init-failure.txt": dict(runs=[(1, "all_reduce", "error", 1)]),
    "markdown-stripped-invalid-device-ordinal.txt": dict(
        runs=[(1, "all_reduce", "error", 1)]
    ),
    "cetus-h200-bfloat16-interleaved-info.txt": dict(
        runs=[(1, None, "completed", 0)], hint="all_reduce"
    ),
    "eks-efa-tagged-old-error-column.txt": dict(
        runs=[(1, None, "completed", 0)],
        prefix=TAG,
        layout="noroot",
        wrong="maxerr",
        hint="all_reduce",
    ),
    "nccl-583-markdown-stripped-hash.txt": dict(
        runs=[(1, "all_reduce", "partial", 1)], layout="noroot", wrong="maxerr"
    ),
    "nccl-340-nccl-2.6-no-redop-two-runs.txt": dict(
        runs=[(1, None, "completed", 0), (16, "broadcast", "partial", 1)],
        layout="noredop",
        wrong="maxerr",
        hint="all_reduce",
    ),
    "awsome-placeholder-values.txt": dict(
        runs=[(1, "all_gather", None, 0)], refuse="not a number"
    ),
    "l40s-reducing-maxbytes.txt": dict(runs=[(1, "all_reduce", "completed", 0)]),
}


def number(tok):
    return float(tok)


def half(toks, wrong_kind):
    t, alg, bus, w = toks
    if w == "N/A" or wrong_kind == "maxerr":
        wrong = None  # not a count: unchecked (-c 0) or the old max-error column
    else:
        wrong = int(round(float(w)))
    return [number(t), number(alg), number(bus), wrong]


def rows_of(lines, spec):
    lead = LAYOUTS[spec.get("layout", "modern")]
    prefix = re.compile(spec["prefix"]) if spec.get("prefix") else None
    want = len(lead) + 8
    out = []
    for n, raw in lines:
        line = raw.rstrip("\r\n")
        if prefix:
            m = prefix.match(line)
            if m:
                line = line[m.end():]
        toks = line.split()
        if len(toks) != want or not toks[0].isdigit():
            continue
        try:
            f = dict(zip(lead, toks))
            rest = toks[len(lead):]
            row = {
                "line": n,
                "size": int(f["size"]),
                "count": int(f["count"]),
                "type": f["type"],
                "redop": f.get("redop", "none" if "redop" not in f else f["redop"]),
                "root": int(f.get("root", "-1")),
                "out_of_place": half(rest[0:4], spec.get("wrong")),
                "in_place": half(rest[4:8], spec.get("wrong")),
            }
        except ValueError:
            continue  # placeholders such as XXXXX are not rows
        out.append(row)
    return out


def expected(name, spec):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        lines = list(enumerate(f.readlines(), start=1))
    starts = [r[0] for r in spec["runs"]] + [len(lines) + 1]
    runs = []
    for i, (start, coll, status, errors) in enumerate(spec["runs"]):
        mine = [(n, l) for n, l in lines if start <= n < starts[i + 1]]
        runs.append(
            {
                "collective": coll,
                "status": status,
                "min_errors": errors,
                "rows": rows_of(mine, spec),
            }
        )
    unnamed = any(r["collective"] is None for r in runs)
    refuse = spec.get("refuse") or ("cannot tell which collective ran" if unnamed else None)
    return {"log": name, "refuse": refuse, "hint": spec.get("hint"), "runs": runs}


def main():
    logs = sorted(f for f in os.listdir(HERE) if f.endswith(".txt"))
    missing = set(logs) ^ set(MANIFEST)
    if missing:
        sys.exit(f"manifest and corpus differ: {sorted(missing)}")
    os.makedirs(os.path.join(HERE, "expected"), exist_ok=True)
    for name in logs:
        doc = expected(name, MANIFEST[name])
        with open(os.path.join(HERE, "expected", name[:-4] + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    print(f"{len(logs)} expected files written")


if __name__ == "__main__":
    main()
