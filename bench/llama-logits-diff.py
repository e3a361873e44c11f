#!/usr/bin/env python3
# llama-logits-diff.py - compares the logits two llama-drive runs wrote (LLDRIVE_LOGITS=FILE):
# per position the largest absolute difference, that relative to the reference's logit range,
# and whether the greedy choice (argmax) agrees.  Exit status 1 when the files differ in size.
#
#   llama-logits-diff.py REFERENCE.bin OTHER.bin N_VOCAB
import sys

import numpy as np


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: llama-logits-diff.py REFERENCE.bin OTHER.bin N_VOCAB")
    n_vocab = int(sys.argv[3])
    ref = np.fromfile(sys.argv[1], dtype=np.float32)
    oth = np.fromfile(sys.argv[2], dtype=np.float32)
    if ref.size != oth.size or ref.size % n_vocab:
        print("sizes differ or are not rows of %d: %d and %d floats" % (n_vocab, ref.size, oth.size))
        return 1
    ref, oth = ref.reshape(-1, n_vocab), oth.reshape(-1, n_vocab)
    diff = np.abs(ref.astype(np.float64) - oth)
    span = ref.max(axis=1) - ref.min(axis=1)
    rel = diff.max(axis=1) / np.where(span > 0, span, 1)
    same = (ref.argmax(axis=1) == oth.argmax(axis=1))
    bitwise = int((diff.max(axis=1) == 0).sum())
    print("rows %d  bit-identical %d  argmax equal %d  max |d| %.3g  max |d|/range %.3g  first argmax miss %s"
          % (len(ref), bitwise, int(same.sum()), diff.max(), rel.max(),
             int(np.argmin(same)) if not same.all() else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
