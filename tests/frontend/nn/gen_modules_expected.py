# gen_modules_expected.py - PyTorch 1.13 reference values for modules_parity_test.cpp:
#   /usr/bin/python3 tests/frontend/nn/gen_modules_expected.py > tests/frontend/nn/modules_expected.h
#
# Every case: parameters (sorted by name, k = 0, 1, ...) = seq(numel, 0.31 + 0.17k, 0.5k) * 0.5,
# input = seq(...) as listed, out = module(input), then sum(out * seq(out.numel, 0.77, 0.5)).backward().
# Emitted per case: "<case>.out", "<case>.grad" (input) and "<case>.<param>.grad" (parameters),
# plus extra tensors (running stats).  seq(n, a, b)[i] = sin(a*i + b) * 2, rebuilt by the C++ test.
import math
import torch

torch.set_default_dtype(torch.float64)
nn = torch.nn
F = torch.nn.functional
out = {}


def seq(n, a, b):
    return torch.tensor([math.sin(a * i + b) * 2 for i in range(n)])


def set_params(m):
    with torch.no_grad():
        for k, (name, p) in enumerate(sorted(m.named_parameters())):
            p.copy_(seq(p.numel(), 0.31 + 0.17 * k, 0.5 * k).reshape(p.shape) * 0.5)


def run(case, m, x, fwd=None, grad_input=True):
    if m is not None:
        set_params(m)
    if grad_input:
        x = x.clone().requires_grad_()
    y = fwd(x) if fwd else m(x)
    out[case + ".out"] = y
    (y * seq(y.numel(), 0.77, 0.5).reshape(y.shape)).sum().backward()
    if grad_input:
        out[case + ".grad"] = x.grad
    if m is not None:
        for name, p in sorted(m.named_parameters()):
            out[case + "." + name + ".grad"] = p.grad.clone()  # zero_grad() reuses the tensor
    return m


def X(shape, a=0.37, b=0.1):
    return seq(math.prod(shape), a, b).reshape(shape)


# ---- layers
run("linear", nn.Linear(5, 3), X((2, 4, 5)))
run("linear_nobias", nn.Linear(5, 3, bias=False), X((4, 5), 0.23))
emb = nn.Embedding(7, 4, padding_idx=2)
ids = torch.tensor([[0, 2, 6], [3, 2, 0]])
run("embedding", emb, ids, fwd=lambda i: emb(i), grad_input=False)
run("layernorm", nn.LayerNorm(6), X((3, 6)))
run("layernorm2d", nn.LayerNorm([2, 3], eps=1e-3), X((4, 2, 3), 0.61))
rms_w = nn.Parameter(torch.ones(6))
class RMS(nn.Module):  # torch 1.13 has no RMSNorm: its definition, eps explicit
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(6))
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
run("rmsnorm", RMS(), X((3, 6), 0.43))
for name, m in [("relu", nn.ReLU()), ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU(approximate="tanh")),
                ("silu", nn.SiLU()), ("tanh", nn.Tanh()), ("sigmoid", nn.Sigmoid())]:
    run(name, m, X((3, 4)))
run("softmax", nn.Softmax(dim=1), X((2, 3, 4)))
run("flatten", nn.Flatten(), X((2, 3, 2, 2)))
run("conv2d", nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), X((2, 4, 7, 6), 0.29))
run("conv2d_b", nn.Conv2d(3, 2, (2, 3), stride=(1, 2), padding=(1, 0), dilation=(2, 1)), X((1, 3, 5, 6), 0.53))
run("maxpool", nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), X((1, 2, 7, 7), 0.71))
run("maxpool_dil", nn.MaxPool2d(2, stride=1, dilation=2), X((2, 1, 5, 5), 0.83))
run("avgpool", nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), X((1, 2, 7, 7), 0.71))
run("avgpool2", nn.AvgPool2d(2), X((2, 1, 4, 6), 0.19))
bn = run("bn1d", nn.BatchNorm1d(3), X((4, 3), 0.47))
out["bn1d.running_mean"] = bn.running_mean
out["bn1d.running_var"] = bn.running_var
bn.eval()
out["bn1d.eval"] = bn(X((4, 3), 0.21))
bn3 = run("bn1d_3d", nn.BatchNorm1d(3, momentum=None), X((2, 3, 5), 0.59))
out["bn1d_3d.running_var"] = bn3.running_var
# MultiheadAttention (batch_first), self- and cross-attention, key padding mask, float mask.
mha = nn.MultiheadAttention(8, 2, batch_first=True)
kv = X((2, 5, 8), 0.27, 0.9)
run("mha_self", mha, X((2, 3, 8), 0.31), fwd=lambda q: mha(q, q, q, need_weights=False)[0])
mha.zero_grad()
kpm = torch.tensor([[False, False, True, False, True], [False, False, False, False, False]])
run("mha_cross", mha, X((2, 3, 8), 0.31), fwd=lambda q: mha(q, kv, kv, key_padding_mask=kpm, need_weights=False)[0])
mha.zero_grad()
am = seq(15, 0.5, 0.0).reshape(3, 5)
run("mha_mask", mha, X((2, 3, 8), 0.31), fwd=lambda q: mha(q, kv, kv, attn_mask=am, need_weights=False)[0])
mha2 = nn.MultiheadAttention(6, 3, bias=False)  # (L, N, E) layout
run("mha_seqfirst", mha2, X((4, 2, 6), 0.13), fwd=lambda q: mha2(q, q, q, need_weights=False)[0])

# ---- losses: value and input gradient
t = torch.tensor([1, -100, 4, 0])
logp = F.log_softmax(X((4, 5), 0.37), 1)
for r in ["mean", "sum", "none"]:
    run("nll_" + r, None, logp, fwd=lambda x: nn.NLLLoss(reduction=r)(x, t))
    run("mse_" + r, None, X((3, 4)), fwd=lambda x: nn.MSELoss(reduction=r)(x, X((3, 4), 0.91)))
    run("l1_" + r, None, X((3, 4)), fwd=lambda x: nn.L1Loss(reduction=r)(x, X((3, 4), 0.91)))
    run("bce_" + r, None, torch.sigmoid(X((2, 3))),
        fwd=lambda x: nn.BCELoss(reduction=r)(x, torch.tensor([[1.0, 0.0, 0.3], [1.0, 0.0, 0.8]])))
    run("ce_smooth_" + r, None, X((4, 5)),
        fwd=lambda x: nn.CrossEntropyLoss(reduction=r, label_smoothing=0.2, ignore_index=4)(x, torch.tensor([1, 4, 3, 0])))
probs = F.softmax(X((3, 4), 0.63), 1)
run("ce_probs", None, X((3, 4)), fwd=lambda x: nn.CrossEntropyLoss(label_smoothing=0.1)(x, probs))
run("ce_4d", None, X((2, 3, 2, 2), 0.33), fwd=lambda x: nn.CrossEntropyLoss()(x, torch.tensor([[[0, 2], [1, -100]], [[2, 2], [0, 1]]])))
run("bce_logits_w", None, X((2, 3)) * 3,
    fwd=lambda x: nn.BCEWithLogitsLoss(reduction="sum", pos_weight=torch.tensor([0.5, 1.0, 3.0]))(x, torch.tensor([[1.0, 0.0, 0.3], [1.0, 0.0, 0.8]])))

print("// modules_expected.h - generated by gen_modules_expected.py with Debian's torch %s; do not edit." % torch.__version__)
print("#pragma once\n#include <map>\n#include <string>\n#include <vector>\nnamespace expected {")
print("inline const std::map<std::string, std::vector<double>> modules = {")
for k in sorted(out):
    vals = ", ".join(repr(float(v)) for v in out[k].detach().reshape(-1).tolist())
    print('    {"%s", {%s}},' % (k, vals))
print("};\n}  // namespace expected")
