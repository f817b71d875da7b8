"""PyTorch's FedAvg round for bench/fedavg-round.ts: the same 2NN, data and hyperparameters.

The bench writes the server parameters and the cohort's data to a folder as raw
little-endian arrays (float32, labels int32) with a meta.json of their shapes; this script
runs `rounds` timed rounds after one warm-up, each as plain PyTorch code: clients one after
another, per batch a forward pass, autograd's backward pass and an SGD update, then the
example-weighted mean of the clients' models. It writes the new parameters and the mean
training loss of the last round to the folder (for the bench to compare) and prints one JSON
line: {"seconds": [...], "threads": n, "version": "..."}.

usage: python3 bench/fedavg_round_torch.py FOLDER ROUNDS
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

KEYS = ["w1", "b1", "w2", "b2", "w3", "b3"]


def load(folder: Path, meta: dict, name: str, dtype) -> torch.Tensor:
    data = np.fromfile(folder / f"{name}.bin", dtype=dtype).reshape(meta[name])
    return torch.from_numpy(data)


def fedavg_round(params, x, y, counts, lr):
    """One round: each client trains from the server parameters, the server averages by example counts."""
    total = counts.sum()
    mean = [torch.zeros_like(p) for p in params]
    loss_sum = torch.zeros(())
    for c in range(x.shape[0]):
        local = [p.clone().requires_grad_(True) for p in params]
        for s in range(x.shape[1]):
            w1, b1, w2, b2, w3, b3 = local
            h1 = torch.relu(x[c, s] @ w1 + b1)
            h2 = torch.relu(h1 @ w2 + b2)
            loss = F.cross_entropy(h2 @ w3 + b3, y[c, s])
            grads = torch.autograd.grad(loss, local)
            with torch.no_grad():
                for p, g in zip(local, grads):
                    p -= lr * g
                loss_sum += loss.detach() * x.shape[2]
        with torch.no_grad():
            for m, p in zip(mean, local):
                m += p * (counts[c] / total)
    return mean, loss_sum / total


def main() -> None:
    folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
    meta = json.loads((folder / "meta.json").read_text())
    params = [load(folder, meta, k, np.float32) for k in KEYS]
    x = load(folder, meta, "x", np.float32)
    y = load(folder, meta, "y", np.int32).long()
    counts = load(folder, meta, "count", np.float32)
    lr = meta["lr"]
    fedavg_round(params, x, y, counts, lr)  # warm-up
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        new_params, loss = fedavg_round(params, x, y, counts, lr)
        seconds.append(time.perf_counter() - start)
    for k, p in zip(KEYS, new_params):
        p.numpy().astype("<f4").tofile(folder / f"out-{k}.bin")
    np.array([loss.item()], dtype="<f4").tofile(folder / "out-loss.bin")
    print(json.dumps({"seconds": seconds, "threads": torch.get_num_threads(), "version": torch.__version__}))


if __name__ == "__main__":
    main()
