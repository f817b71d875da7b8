"""PyTorch's FedAvg round for bench/fedavg-round.ts (the 2NN) and bench/cnn-round.ts (the CNN):
the same model, initial parameters, data and hyperparameters.

The bench writes the server parameters and the cohort's data to a folder as raw
little-endian arrays (float32, labels int32) with a meta.json of their shapes, the learning
rate, the threads, and for the CNN the model ("2nn" by default, or "cnn"), the parameter
names in order and the form of the round ("sequential" by default);
this script runs `rounds` timed rounds after a warm-up on two clients and writes the new parameters and the
mean training loss of the last round to the folder (for the bench to compare), then prints
one JSON line: {"seconds": [...], "threads": n, "version": "..."}.

Forms of a round:
  sequential  plain PyTorch code: clients one after another, per batch a forward pass,
              autograd's backward pass and an SGD update, then the example-weighted mean
  vmap        all clients at once: functorch's vmap of grad over the client axis, one
              batched forward and backward pass per step for the whole cohort

Parameters come in FedTensor's layouts (dense [in, out]; conv HWIO, images NHWC); the CNN
runs in PyTorch's own (OIHW, NCHW), converted once before and after the round: the dense
layer's rows are permuted from NHWC's flattening order to NCHW's, so no step transposes.

usage: python3 bench/fedavg_round_torch.py FOLDER ROUNDS
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F


def load(folder: Path, meta: dict, name: str, dtype) -> torch.Tensor:
    data = np.fromfile(folder / f"{name}.bin", dtype=dtype).reshape(meta[name])
    return torch.from_numpy(data)


def mlp2nn_logits(params, x):
    w1, b1, w2, b2, w3, b3 = params
    h1 = torch.relu(x @ w1 + b1)
    h2 = torch.relu(h1 @ w2 + b2)
    return h2 @ w3 + b3


def cnn_logits(params, x):
    """The FedAvg paper's CNN, in PyTorch's layouts (see to_torch_layout)."""
    conv1, bias1, conv2, bias2, dense, dense_bias, out, out_bias = params
    images = x.reshape(-1, 1, 28, 28)
    h1 = F.max_pool2d(torch.relu(F.conv2d(images, conv1, bias1, padding=2)), 2)
    h2 = F.max_pool2d(torch.relu(F.conv2d(h1, conv2, bias2, padding=2)), 2)
    features = torch.relu(F.linear(h2.flatten(1), dense, dense_bias))
    return F.linear(features, out, out_bias)


def cnn_to_torch(params):
    """HWIO filters to OIHW; dense [3136, 512] with NHWC's row order to Linear's [512, 3136] in NCHW's order."""
    conv1, bias1, conv2, bias2, dense, dense_bias, out, out_bias = params
    dense_nchw = dense.reshape(7, 7, 64, 512).permute(2, 0, 1, 3).reshape(3136, 512)
    return [conv1.permute(3, 2, 0, 1), bias1, conv2.permute(3, 2, 0, 1), bias2, dense_nchw.t(), dense_bias, out.t(), out_bias]


def cnn_from_torch(params):
    conv1, bias1, conv2, bias2, dense, dense_bias, out, out_bias = params
    dense_nhwc = dense.t().reshape(64, 7, 7, 512).permute(1, 2, 0, 3).reshape(3136, 512)
    return [conv1.permute(2, 3, 1, 0), bias1, conv2.permute(2, 3, 1, 0), bias2, dense_nhwc, dense_bias, out.t(), out_bias]


MODELS = {
    "2nn": (mlp2nn_logits, list, list),
    "cnn": (cnn_logits, cnn_to_torch, cnn_from_torch),
}


def sequential_round(logits, params, x, y, counts, lr):
    """One round: each client trains from the server parameters, the server averages by example counts."""
    total = counts.sum()
    mean = [torch.zeros_like(p) for p in params]
    loss_sum = torch.zeros(())
    for c in range(x.shape[0]):
        local = [p.clone().requires_grad_(True) for p in params]
        for s in range(x.shape[1]):
            loss = F.cross_entropy(logits(local, x[c, s]), y[c, s])
            grads = torch.autograd.grad(loss, local)
            with torch.no_grad():
                for p, g in zip(local, grads):
                    p -= lr * g
                loss_sum += loss.detach() * x.shape[2]
        with torch.no_grad():
            for m, p in zip(mean, local):
                m += p * (counts[c] / total)
    return mean, loss_sum / total


def vmap_round(logits, params, x, y, counts, lr):
    """The same round with the clients batched: per step, vmap(grad) over [C, ...] parameters."""
    from functorch import grad_and_value, vmap

    def loss_fn(p, xb, yb):
        return F.cross_entropy(logits(p, xb), yb)

    step = vmap(grad_and_value(loss_fn))
    clients = x.shape[0]
    local = [p.expand(clients, *p.shape).clone() for p in params]
    loss_sum = torch.zeros(())
    with torch.no_grad():
        for s in range(x.shape[1]):
            grads, losses = step(local, x[:, s], y[:, s])
            for p, g in zip(local, grads):
                p -= lr * g
            loss_sum += losses.sum() * x.shape[2]
        weights = counts / counts.sum()
        mean = [torch.tensordot(weights, p, dims=1) for p in local]
    return mean, loss_sum / counts.sum()


FORMS = {"sequential": sequential_round, "vmap": vmap_round}


def main() -> None:
    folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
    meta = json.loads((folder / "meta.json").read_text())
    keys = meta.get("keys", ["w1", "b1", "w2", "b2", "w3", "b3"])
    logits, to_torch, from_torch = MODELS[meta.get("model", "2nn")]
    fedavg_round = FORMS[meta.get("form", "sequential")]
    if "threads" in meta:
        torch.set_num_threads(meta["threads"])
    params = to_torch([load(folder, meta, k, np.float32) for k in keys])
    params = [p.contiguous() for p in params]
    x = load(folder, meta, "x", np.float32)
    y = load(folder, meta, "y", np.int32).long()
    counts = load(folder, meta, "count", np.float32)
    lr = meta["lr"]
    # Warm-up (thread pools, oneDNN's primitives, allocations) on two clients: a CNN round takes a minute here.
    fedavg_round(logits, params, x[:2], y[:2], counts[:2], lr)
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        new_params, loss = fedavg_round(logits, params, x, y, counts, lr)
        seconds.append(time.perf_counter() - start)
    for k, p in zip(keys, from_torch(new_params)):
        p.contiguous().numpy().astype("<f4").tofile(folder / f"out-{k}.bin")
    np.array([loss.item()], dtype="<f4").tofile(folder / "out-loss.bin")
    print(json.dumps({"seconds": seconds, "threads": torch.get_num_threads(), "version": torch.__version__}))


if __name__ == "__main__":
    main()
