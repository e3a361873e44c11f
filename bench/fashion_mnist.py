"""Shared by the PyTorch training benchmarks: Fashion-MNIST from Debian's
dataset-fashion-mnist (gzip'd IDX), the command line, and the training loop
timed per epoch the way ggmlc-train times its epochs (training steps only).
--device cuda trains on the GPU: the dataset is moved there once, batches are
gathered there, the loss is summed there and read once per epoch (as
`ggmlc-bench train-epoch` does on Vulkan), and each epoch's time ends with a
synchronize so that it counts all the work queued."""
import argparse
import gzip
import os
import struct
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
import numpy as np  # noqa: E402
import torch  # noqa: E402

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path, dims):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    if magic != 0x0800 | dims:
        sys.exit(f"{path}: not an IDX file of {dims} dimensions")
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(part, data_dir):
    x = read_idx(f"{data_dir}/{part}-images-idx3-ubyte.gz", 3).astype(np.float32) / 255.0
    y = read_idx(f"{data_dir}/{part}-labels-idx1-ubyte.gz", 1).astype(np.int64)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)  # (N, 1, 28, 28): channels first


def parse_args(what):
    p = argparse.ArgumentParser(description=f"Train {what} on Fashion-MNIST with PyTorch.")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    return p.parse_args()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(model_fn, what):
    args = parse_args(what)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if not os.path.exists(f"{args.data_dir}/train-images-idx3-ubyte.gz"):
        sys.exit(f"Fashion-MNIST not found in {args.data_dir} (on Debian: apt-get install dataset-fashion-mnist)")
    x_train, y_train = load("train", args.data_dir)
    x_test, y_test = load("t10k", args.data_dir)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: PyTorch sees no CUDA device")
    x_train, y_train = x_train.to(device), y_train.to(device)
    x_test, y_test = x_test.to(device), y_test.to(device)
    model = model_fn().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = x_train.shape[0]
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {where}, {what}, batch {args.batch}, {n} training samples")
    times = []
    for epoch in range(args.epochs):
        model.train()
        perm = torch.randperm(n, device=device)
        synchronize(device)
        start = time.perf_counter()
        total = torch.zeros((), device=device)
        for i in range(0, n, args.batch):
            idx = perm[i:i + args.batch]
            opt.zero_grad()
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.detach() * idx.shape[0]
        synchronize(device)
        times.append(time.perf_counter() - start)
        print(f"epoch {epoch + 1}/{args.epochs} - {times[-1]:.2f}s - loss: {total.item() / n:.4f}", flush=True)
    model.eval()
    with torch.no_grad():
        correct = sum((model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum().item()
                      for i in range(0, x_test.shape[0], 1000))
    print(f"test accuracy {correct / x_test.shape[0]:.4f} on {x_test.shape[0]} samples")
    print(f"epoch time {sum(times) / len(times):.3f} s (mean of {len(times)} epochs, fastest {min(times):.3f} s)")
