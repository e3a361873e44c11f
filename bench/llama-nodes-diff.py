#!/usr/bin/env python3
# llama-nodes-diff.py A B - compares two LLDRIVE_NODES files of bench/llama-drive (the same model,
# prompt and threads run on two builds, e.g. llama.cpp on ggml and on ggmlc): the nodes are paired
# in order, and the first whose bytes differ (its hash) is printed from both files with the nodes
# before it, then the count of differing nodes per decode and per operator.
import collections
import sys


def read(path):
    with open(path) as f:
        return [line.split() for line in f if line.strip()]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: llama-nodes-diff.py A B")
    a, b = read(sys.argv[1]), read(sys.argv[2])
    first = None
    per_decode, per_op = collections.Counter(), collections.Counter()
    for i, (x, y) in enumerate(zip(a, b)):
        if x[:5] != y[:5]:
            print(f"node {i}: the graphs differ here:\n  A {' '.join(x)}\n  B {' '.join(y)}")
            break
        if x[5] != y[5]:
            per_decode[x[0]] += 1
            per_op[x[2]] += 1
            if first is None:
                first = i
    print(f"{len(a)} and {len(b)} nodes")
    if first is None:
        print("no node differs")
        return
    print(f"first differing node: {first}")
    for j in range(max(0, first - 3), first + 1):
        print(f"  A {' '.join(a[j])}\n  B {' '.join(b[j])}")
    print("differing nodes per decode:", dict(sorted(per_decode.items(), key=lambda kv: int(kv[0]))))
    print("per operator:", dict(per_op.most_common()))


if __name__ == "__main__":
    main()
