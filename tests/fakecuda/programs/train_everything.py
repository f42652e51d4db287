"""A training script that touches much of what GPU code uses (packed sequences, LSTM,
a transformer encoder, conv + batch norm, amp, GradScaler, grad clipping, a scheduler,
a DataLoader with pinned memory, evaluation, .cpu().numpy(), image ops, a checkpoint
round trip): it must run as plain CPU code and under fake CUDA alike, with no false failure.
"""

import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.benchmark = True


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16, padding_idx=0)
        self.lstm = nn.LSTM(16, 16, batch_first=True, bidirectional=True)
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.1)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.conv = nn.Sequential(nn.Conv1d(32, 32, 3, padding=1), nn.BatchNorm1d(32), nn.GELU())
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 5)
        self.register_buffer("scale", torch.tensor(1.0))
        self.pos = nn.Parameter(torch.zeros(1, 12, 32))

    def forward(self, ids, lengths):
        x = self.emb(ids)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.size(1))
        out = out + self.pos[:, : out.size(1)]
        mask = torch.arange(ids.size(1), device=ids.device)[None, :] >= lengths.to(ids.device)[:, None]
        out = self.enc(out, src_key_padding_mask=mask)
        out = self.conv(out.transpose(1, 2)).transpose(1, 2)
        out = self.norm(out).masked_fill(mask[..., None], 0.0)
        pooled = out.sum(1) / lengths.to(out.device).clamp(min=1)[:, None].float()
        return self.head(pooled) * self.scale


def data():
    ids = torch.randint(1, 50, (64, 12))
    lengths = torch.randint(3, 13, (64,))
    labels = torch.randint(0, 5, (64,))
    ids[torch.arange(12)[None, :] >= lengths[:, None]] = 0
    return DataLoader(TensorDataset(ids, lengths, labels), batch_size=16, shuffle=True, pin_memory=True)


def train(model, loader, epochs=2):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=20)
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
    half = torch.float16 if device.type == "cuda" else torch.bfloat16
    for epoch in range(epochs):
        model.train()
        for ids, lengths, labels in loader:
            ids, lengths, labels = ids.to(device, non_blocking=True), lengths.to(device), labels.to(device)
            with torch.autocast(device.type, dtype=half):
                loss = F.cross_entropy(model(ids, lengths), labels, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            sched.step()
        evaluate(model, loader, epoch)
    return opt, sched, scaler


def evaluate(model, loader, epoch):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for ids, lengths, labels in loader:
            ids, lengths, labels = ids.to(device), lengths.to(device), labels.to(device)
            logits = model(ids, lengths)
            correct += (logits.argmax(1) == labels).sum().item()
            total += labels.numel()
            top2 = logits.topk(2, dim=1).indices
            probs = F.softmax(logits, dim=-1).cpu().numpy()
    print("epoch", epoch, "acc", correct / total, probs.shape, top2.device)


def image_ops():
    img = torch.randn(2, 3, 16, 16, device=device)
    up = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False)
    theta = torch.eye(2, 3, device=device)[None].repeat(2, 1, 1)
    warped = F.grid_sample(img, F.affine_grid(theta, (2, 3, 16, 16), align_corners=False), align_corners=False)
    onehot = F.one_hot(torch.tensor([1, 2], device=device), 5).float()
    dist = torch.cdist(torch.randn(4, 3, device=device), torch.randn(5, 3, device=device))
    counts = torch.zeros(5, device=device).scatter_add_(
        0, torch.tensor([0, 1, 1], device=device), torch.ones(3, device=device)
    )
    eye = torch.eye(3, device=device) @ torch.ones(3, 1, device=device)
    print(up.shape, warped.device, onehot.device, dist.shape, counts.tolist(), eye.device)


def checkpoint(model, opt, sched, scaler):
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
             "scaler": scaler.state_dict(), "epoch": 2}
    torch.save(state, path)
    loaded = torch.load(path, map_location=device)
    model.load_state_dict(loaded["model"])
    opt.load_state_dict(loaded["opt"])
    sched.load_state_dict(loaded["sched"])
    print("loaded", next(model.parameters()).device, opt.state_dict()["state"][0]["exp_avg"].device)


def main():
    model = Net().to(device)
    opt, sched, scaler = train(model, data())
    image_ops()
    checkpoint(model, opt, sched, scaler)
    print("memory", torch.cuda.max_memory_allocated() if device.type == "cuda" else 0)


if __name__ == "__main__":
    main()
