"""PyTorch's FedAvg round of the character LSTM for bench/lstm-round.ts: the same model, data
and hyperparameters as src/lib/models/lstm.ts (embedding, one LSTM layer with PyTorch's gate
order, a dense layer on the last hidden state), written as PyTorch users write it, in two forms:

- "nn.LSTM": clients one after another, each an nn.Embedding + nn.LSTM + nn.Linear loaded with
  the server's weights, per batch autograd's backward pass and an SGD step (PyTorch's fused
  CPU LSTM kernel);
- "batched": all clients at once, each client's weights stacked on a leading axis, the cell
  written out with torch.baddbmm so that one batched product serves every client per step.

Each form runs one warm-up round and `rounds` timed rounds; the faster is PyTorch's best. The
bench writes the server parameters and the cohort's windows to a folder as raw little-endian
arrays (float32; ids and labels int32) with a meta.json of their shapes; this script writes
the new parameters and mean training loss of the nn.LSTM form's last round (out-NAME.bin) and
prints one JSON line: {"seconds": [...best form...], "forms": {form: [...]}, "best": form,
"threads": n, "version": "..."}.

usage: python3 bench/lstm_round_torch.py FOLDER ROUNDS
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

KEYS = ["embedding", "inputKernel", "recurrentKernel", "bias", "out", "outBias"]


def load(folder: Path, meta: dict, name: str, dtype) -> torch.Tensor:
    data = np.fromfile(folder / f"{name}.bin", dtype=dtype).reshape(meta[name])
    return torch.from_numpy(data)


class CharLstm(nn.Module):
    def __init__(self, vocabulary: int, embedding: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, embedding)
        self.lstm = nn.LSTM(embedding, hidden, batch_first=True)
        # One bias per gate, as the model has: bias_hh stays 0 (trained too, it would double the step).
        self.lstm.bias_hh_l0.requires_grad_(False)
        self.dense = nn.Linear(hidden, vocabulary)

    def load(self, p: dict) -> None:
        """The server's weights (src/lib/models/lstm.ts's layout: kernels [in, out])."""
        with torch.no_grad():
            self.embed.weight.copy_(p["embedding"])
            self.lstm.weight_ih_l0.copy_(p["inputKernel"].T)
            self.lstm.weight_hh_l0.copy_(p["recurrentKernel"].T)
            self.lstm.bias_ih_l0.copy_(p["bias"])
            self.lstm.bias_hh_l0.zero_()
            self.dense.weight.copy_(p["out"].T)
            self.dense.bias.copy_(p["outBias"])

    def export(self) -> dict:
        return {
            "embedding": self.embed.weight.detach(),
            "inputKernel": self.lstm.weight_ih_l0.detach().T,
            "recurrentKernel": self.lstm.weight_hh_l0.detach().T,
            "bias": self.lstm.bias_ih_l0.detach(),
            "out": self.dense.weight.detach().T,
            "outBias": self.dense.bias.detach(),
        }

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.lstm(self.embed(ids))
        return self.dense(h[0])


def round_nn_lstm(model: CharLstm, params: dict, x, y, counts, lr):
    """Clients one after another, each with nn.LSTM and autograd, then the weighted mean."""
    total = counts.sum()
    mean = {k: torch.zeros_like(v) for k, v in params.items()}
    loss_sum = torch.zeros(())
    for c in range(x.shape[0]):
        model.load(params)
        for s in range(x.shape[1]):
            model.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x[c, s]), y[c, s])
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    if p.requires_grad:
                        p -= lr * p.grad
            loss_sum += loss.detach() * x.shape[2]
        with torch.no_grad():
            for k, v in model.export().items():
                mean[k] += v * (counts[c] / total)
    return mean, loss_sum / total


def round_batched(params: dict, x, y, counts, lr):
    """All clients at once: weights stacked per client, the cell as batched products."""
    clients, steps, batch, length = x.shape
    hidden = params["recurrentKernel"].shape[0]
    local = {k: v.unsqueeze(0).repeat(clients, *([1] * v.dim())).requires_grad_(True) for k, v in params.items()}
    loss_sum = torch.zeros(())
    rows = torch.arange(clients).view(clients, 1, 1)
    for s in range(steps):
        emb, wx, wh, b, w_out, b_out = (local[k] for k in KEYS)
        embedded = emb[rows, x[:, s]]  # [C, B, L, E]
        projected = torch.matmul(embedded, wx.unsqueeze(1)) + b.view(clients, 1, 1, -1)  # [C, B, L, 4H]
        h = torch.zeros(clients, batch, hidden)
        c = torch.zeros(clients, batch, hidden)
        for t in range(length):
            gates = torch.baddbmm(projected[:, :, t], h, wh)
            i, f, g, o = gates.chunk(4, dim=2)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        logits = torch.baddbmm(b_out.unsqueeze(1), h, w_out)
        losses = F.cross_entropy(logits.reshape(clients * batch, -1), y[:, s].reshape(-1), reduction="none").view(clients, batch).mean(1)
        grads = torch.autograd.grad(losses.sum(), [local[k] for k in KEYS])
        with torch.no_grad():
            for k, g in zip(KEYS, grads):
                local[k] -= lr * g
        loss_sum += losses.detach().sum() * batch
    weights = (counts / counts.sum()).view(clients, 1)
    mean = {k: (v.detach().reshape(clients, -1) * weights).sum(0).view(params[k].shape) for k, v in local.items()}
    return mean, loss_sum / counts.sum()


def timed(fn, rounds: int):
    fn()  # warm-up
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - start)
    return seconds, result


def main() -> None:
    folder, rounds = Path(sys.argv[1]), int(sys.argv[2])
    meta = json.loads((folder / "meta.json").read_text())
    torch.set_num_threads(meta["threads"])
    params = {k: load(folder, meta, k, np.float32) for k in KEYS}
    x = load(folder, meta, "x", np.int32).long()
    y = load(folder, meta, "y", np.int32).long()
    counts = load(folder, meta, "count", np.float32)
    lr = meta["lr"]
    vocabulary, embedding = params["embedding"].shape
    model = CharLstm(vocabulary, embedding, params["recurrentKernel"].shape[0])
    forms = {}
    forms["nn.LSTM"], (new_params, loss) = timed(lambda: round_nn_lstm(model, params, x, y, counts, lr), rounds)
    forms["batched"], _ = timed(lambda: round_batched(params, x, y, counts, lr), rounds)
    best = min(forms, key=lambda form: sorted(forms[form])[len(forms[form]) // 2])
    for k, p in new_params.items():
        p.contiguous().numpy().astype("<f4").tofile(folder / f"out-{k}.bin")
    np.array([loss.item()], dtype="<f4").tofile(folder / "out-loss.bin")
    print(json.dumps({"seconds": forms[best], "forms": forms, "best": best, "threads": torch.get_num_threads(), "version": torch.__version__}))


if __name__ == "__main__":
    main()
