#!/bin/sh
# test-train-tool.sh - the ggmlc-train command-line tool (TAP): training on the
# embedded digits reaches a stated test accuracy, --plot writes a well-formed
# SVG, --save then --load gives the same accuracy, a CSV file trains too, and
# bad arguments or missing data end with a message and a non-zero status, data of another shape
# than the model's and data beyond the dataset limit are refused.

: "${GGMLC_BUILDDIR:?run through make check}"
tool="$GGMLC_BUILDDIR/tools/ggmlc-train"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggmlc-train-tool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# The digits of this source tree, not an installed copy.
GGMLC_DATA_DIR="$GGMLC_TEST_DATA/../data"
export GGMLC_DATA_DIR

n=0
failed=0
ok() { # ok STATUS "description"
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
# accuracy FILE: the test accuracy ggmlc-train printed
accuracy() { sed -n 's/^test accuracy \([0-9.]*\) .*/\1/p' "$1"; }
# at_least VALUE BOUND: VALUE >= BOUND (decimals)
at_least() { awk -v v="$1" -v b="$2" 'BEGIN { exit !(v != "" && v + 0 >= b + 0) }'; }

# MLP on the digits, 8 epochs: the stated goal is >= 90% test accuracy (about 96% is usual).
"$tool" --epochs 8 --quiet --save "$tmp/m.gguf" --plot "$tmp/curves.svg" >"$tmp/train.txt" 2>&1
st=$?
acc=$(accuracy "$tmp/train.txt")
[ $st -eq 0 ] && at_least "$acc" 0.90
ok $? "an MLP trained 8 epochs on the embedded digits reaches >= 90% test accuracy ($acc)"
[ "$(grep -cv -e '^test accuracy' -e '^epoch time' "$tmp/train.txt")" -eq 0 ] && grep -q '^epoch time [0-9.]* s (mean of 8 epochs' "$tmp/train.txt"
ok $? "--quiet prints only the results"

# The legend box holds its longest label ("validation accuracy"), at 0.6 em (11 px) per character.
awk '/<rect/ && /stroke="#ccc"/ { match($0, /x="[0-9.]*"/); x = substr($0, RSTART + 3, RLENGTH - 4) + 0
         match($0, /width="[0-9.]*"/); w = substr($0, RSTART + 7, RLENGTH - 8) + 0 }
     /<text/ && />validation accuracy</ { match($0, /x="[0-9.]*"/); tx = substr($0, RSTART + 3, RLENGTH - 4) + 0
         found = 1; if (tx + 0.6 * 11 * 19 > x + w) bad = 1 }
     END { exit !(found && !bad) }' "$tmp/curves.svg"
ok $? "the SVG legend box is wide enough for \"validation accuracy\""

# One epoch: "1 epoch", not "1 epochs".
"$tool" --epochs 1 --quiet >"$tmp/one.txt" 2>&1 && grep -q '^epoch time [0-9.]* s (1 epoch)$' "$tmp/one.txt"
ok $? "one epoch's time: $(grep '^epoch time' "$tmp/one.txt")"

# On a terminal of 80 columns the progress line fits: fields are left out or wrapped whole, never cut.
if command -v python3 >/dev/null 2>&1; then
    python3 - "$tool" >"$tmp/tty.txt" 2>&1 <<'PY'
import fcntl, os, pty, re, struct, sys, termios
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    os.execv(sys.argv[1], [sys.argv[1], "--epochs", "2", "--batch", "8"])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
lines = re.split(r"[\r\n]+", out.decode().replace("\x1b[K", ""))
progress = [l for l in lines if "ETA" in l or "- loss" in l or l.startswith("  ")]
longest = max((len(l) for l in progress), default=0)
cut = [l for l in progress if not re.search(r"(ETA: \d+s|: -?\d+\.\d{4})$", l)]
print("longest %d of %d progress lines; cut: %r" % (longest, len(progress), cut[:2]))
sys.exit(0 if progress and longest <= 79 and not cut else 1)
PY
    ok $? "progress at 80 columns: $(cat "$tmp/tty.txt")"
else
    echo "ok $((n = n + 1)) # SKIP progress at 80 columns: no python3"
fi

# Without --quiet the summary says where the model computes.
"$tool" --backend cpu --epochs 1 --val 0 >"$tmp/device.txt" 2>&1 && grep -q '^Device: CPU' "$tmp/device.txt"
ok $? "--backend cpu: the summary's device line names the CPU ($(grep '^Device' "$tmp/device.txt"))"

if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$tmp/curves.svg" 2>"$tmp/xmllint.txt"
    ok $? "--plot writes well-formed XML (xmllint)"
else
    head -c 5 "$tmp/curves.svg" | grep -q '<?xml' && tail -n 1 "$tmp/curves.svg" | grep -q '^</svg>$'
    ok $? "--plot writes an XML document ending in </svg> (no xmllint)"
fi
grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$tmp/curves.svg" && [ "$(grep -c '<polyline' "$tmp/curves.svg")" -eq 6 ] \
    && grep -q 'validation accuracy' "$tmp/curves.svg" && ! ls "$tmp" | grep -q 'tmp-'
ok $? "the SVG has two panels with train and validation curves, and no temporary file is left"

"$tool" --load "$tmp/m.gguf" --quiet >"$tmp/load.txt" 2>&1
st=$?
[ $st -eq 0 ] && [ "$(grep '^test accuracy' "$tmp/load.txt")" = "$(grep '^test accuracy' "$tmp/train.txt")" ]
ok $? "--load of the saved model gives the same test accuracy and loss ($(accuracy "$tmp/load.txt"))"

# A CSV file: three well separated classes of 4 features (a stand-in for any tabular data).
awk 'BEGIN { srand(3); for (i = 0; i < 300; i++) { c = i % 3; printf "%.3f,%.3f,%.3f,%.3f,%d\n",
     c * 4 + rand(), 10 - c * 3 + rand(), rand() * 2, c * c + rand(), c } }' >"$tmp/blobs.csv"
"$tool" --data "$tmp/blobs.csv" --epochs 10 --quiet >"$tmp/csv.txt" 2>&1
st=$?
acc=$(accuracy "$tmp/csv.txt")
[ $st -eq 0 ] && at_least "$acc" 0.95
ok $? "a CSV file of 3 separable classes trains to >= 95% ($acc)"
"$tool" --data "$tmp/blobs.csv" --model cnn --epochs 1 --quiet >"$tmp/cnn-csv.txt" 2>&1
[ $? -eq 4 ] && grep -q 'needs images' "$tmp/cnn-csv.txt"
ok $? "--model cnn on 4 features: exit 4 with a message"

"$tool" --help >"$tmp/help.txt" 2>&1 && grep -q -- '--data' "$tmp/help.txt" && grep -q 'Exit status' "$tmp/help.txt"
ok $? "--help documents the options and exit statuses"

# bad_usage DESCRIPTION EXPECTED-STATUS PATTERN ARGS...: status and message on stderr
bad_usage() {
    desc=$1 want=$2 pattern=$3
    shift 3
    "$tool" "$@" >"$tmp/out.txt" 2>"$tmp/err.txt"
    st=$?
    [ $st -eq "$want" ] && grep -q -- "$pattern" "$tmp/err.txt" && [ ! -s "$tmp/out.txt" ]
    ok $? "$desc: exit $want with a message (got $st: $(head -n 1 "$tmp/err.txt"))"
}
bad_usage "--epochs abc" 2 "invalid value 'abc' for --epochs" --epochs abc
bad_usage "--batch 0" 2 "for --batch" --batch 0
bad_usage "--lr -1" 2 "for --lr" --lr -1
bad_usage "--model rnn" 2 "mlp or cnn" --model rnn
bad_usage "an unknown option" 2 "unknown option '--frobnicate'" --frobnicate
bad_usage "a missing value" 2 "needs a value" --epochs
bad_usage "a stray argument" 2 "unexpected argument" digits
bad_usage "an unknown --backend" 2 "invalid value 'nosuch' for --backend: expected one of.* CPU" --backend nosuch
bad_usage "a missing CSV file" 3 "cannot load the data" --data "$tmp/absent.csv"
printf '1,2,0\n3,x,1\n' >"$tmp/bad.csv"
bad_usage "a damaged CSV file" 3 "bad.csv:2" --data "$tmp/bad.csv"
mkdir "$tmp/empty"
bad_usage "a folder without IDX files" 3 "train-images-idx3-ubyte.gz" --data "$tmp/empty"
bad_usage "a missing model file" 3 "cannot load the model" --load "$tmp/absent.gguf"
head -c 100 "$tmp/m.gguf" >"$tmp/cut.gguf"
bad_usage "a truncated model file" 3 "cannot load the model" --load "$tmp/cut.gguf"
# --save and --plot are checked before training (no epoch printed), not after it.
bad_usage "--save into a missing folder" 2 "cannot write $tmp/absent/m.gguf" --save "$tmp/absent/m.gguf"
mkfifo "$tmp/fifo"
bad_usage "--plot to a FIFO" 2 "FIFO" --plot "$tmp/fifo"

# Data whose shape differs from the model's: refused with both shapes named, never read past.
bad_usage "--load of a digits model on 4 features" 3 "the model takes samples of shape (64), the data have samples of shape (4)" \
    --load "$tmp/m.gguf" --data "$tmp/blobs.csv"

# idx_images FILE N SIDE-OCTAL BYTES: a gzip'd IDX file of N (< 256) blank images of SIDE x SIDE pixels
idx_images() {
    { printf '\000\000\010\003\000\000'; printf "$2"; printf '\000\000\000'; printf "$3"; printf '\000\000\000'; printf "$3"
      head -c "$4" /dev/zero; } | gzip -c >"$1"
}
# idx_labels FILE N-OCTAL-2-BYTES COUNT: a gzip'd IDX file of COUNT labels, all 0 but the last (1)
idx_labels() {
    { printf '\000\000\010\001\000\000'; printf "$2"; head -c "$(($3 - 1))" /dev/zero; printf '\001'; } | gzip -c >"$1"
}
mkdir "$tmp/idx"
idx_images "$tmp/idx/train-images-idx3-ubyte.gz" '\000\040' '\004' 512  # 32 images of 4 x 4
idx_labels "$tmp/idx/train-labels-idx1-ubyte.gz" '\000\040' 32
idx_images "$tmp/idx/t10k-images-idx3-ubyte.gz" '\000\010' '\003' 72   # 8 images of 3 x 3
idx_labels "$tmp/idx/t10k-labels-idx1-ubyte.gz" '\000\010' 8
bad_usage "IDX test images of another size than the training images" 3 \
    "the test samples have shape (1, 3, 3), the training samples (1, 4, 4)" --data "$tmp/idx" --epochs 1

# The dataset limit: 2000 blank 28 x 28 images (a few kB gzip'd, 6 MB as floats) against 1 MiB.
mkdir "$tmp/big"
idx_images "$tmp/big/train-images-idx3-ubyte.gz" '\007\320' '\034' 1568000
idx_labels "$tmp/big/train-labels-idx1-ubyte.gz" '\007\320' 2000
cp "$tmp/big/train-images-idx3-ubyte.gz" "$tmp/big/t10k-images-idx3-ubyte.gz"
cp "$tmp/big/train-labels-idx1-ubyte.gz" "$tmp/big/t10k-labels-idx1-ubyte.gz"
bad_usage "--max-data 1 on 6 MB of IDX images" 3 "more than the dataset limit of 1048576 bytes" --data "$tmp/big" --max-data 1
export GGMLC_DATASET_MAX_BYTES=1M
bad_usage "GGMLC_DATASET_MAX_BYTES=1M on the same" 3 "dataset limit of 1048576" --data "$tmp/big"
unset GGMLC_DATASET_MAX_BYTES
"$tool" --data "$tmp/big" --max-data 64 --epochs 1 --quiet >"$tmp/big.txt" 2>&1
ok $? "--max-data 64 lets them load and train ($(head -n 1 "$tmp/big.txt"))"
bad_usage "--max-data 0" 2 "for --max-data" --max-data 0

# --limit: a quick trial on the first samples.
"$tool" --limit 100 --epochs 1 --val 0 >"$tmp/limit.txt" 2>&1 && grep -q '^training on the first 100 of [0-9]* samples' "$tmp/limit.txt" \
    && grep -q '^test accuracy' "$tmp/limit.txt"
ok $? "--limit 100 trains on 100 of the training digits ($(grep '^training on' "$tmp/limit.txt"))"
bad_usage "--limit 0" 2 "for --limit" --limit 0

echo "1..$n"
exit $failed
