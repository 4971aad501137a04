"""genesis on a CUDA device from Python: device and allocator statistics, ops and autograd against
the same computation on the CPU, an optimizer run, DLPack with PyTorch's CUDA tensors (zero copy),
bf16 autocast and Qwen generation. Every test skips without a CUDA device."""
import numpy as np
import pytest

import genesis
import genesis.models as M
import genesis.nn as nn
from conftest import torch

pytestmark = pytest.mark.skipif(not genesis.cuda.is_available(), reason="no CUDA device")


def on_cpu(t):
    return t.detach().to("cpu").numpy()


def test_device_and_allocator_statistics():
    assert genesis.cuda.device_count() >= 1
    genesis.cuda.empty_cache()
    before = genesis.cuda.memory_allocated()
    x = genesis.zeros((1024, 1024), device="cuda")  # 4 MiB
    assert str(x.device).startswith("cuda")
    assert genesis.cuda.memory_allocated() >= before + 4 * 2**20
    assert genesis.cuda.max_memory_allocated() >= before + 4 * 2**20
    del x
    assert genesis.cuda.memory_allocated() == before
    genesis.cuda.empty_cache()
    stats = genesis.cuda.memory_stats()
    assert stats["num_allocs"] >= 1 and stats["num_frees"] >= 1


def test_ops_and_gradients_match_the_cpu():
    genesis.manual_seed(0)
    a = genesis.randn((64, 32), dtype=genesis.float64)
    w = genesis.randn((32, 16), dtype=genesis.float64)

    def run(device):
        x = a.to(device).requires_grad_()
        y = w.to(device).requires_grad_()
        h = (x @ y).tanh()
        loss = (h.softmax(-1) * 3 + h.exp().mean(0)).log_softmax(-1).sum() + (h ** 2).sum().sqrt()
        loss.backward()
        return loss, x.grad, y.grad

    got, want = run("cuda"), run("cpu")
    for g, c in zip(got, want):
        np.testing.assert_allclose(on_cpu(g), on_cpu(c), rtol=1e-10, atol=1e-12)


def test_adamw_training_matches_the_cpu():
    def make(device):
        genesis.manual_seed(3)
        m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(genesis.float64).to(device)
        return m, genesis.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)

    (gm, gopt), (cm, copt) = make("cuda"), make("cpu")
    genesis.manual_seed(4)
    x, y = genesis.randn((8, 16), dtype=genesis.float64), genesis.randn((8, 4), dtype=genesis.float64)
    for _ in range(5):
        for m, opt, dev in ((gm, gopt, "cuda"), (cm, copt, "cpu")):
            opt.zero_grad()
            nn.functional.mse_loss(m(x.to(dev)), y.to(dev)).backward()
            opt.step()
    for (n, p), (_, q) in zip(gm.named_parameters(), cm.named_parameters()):
        np.testing.assert_allclose(on_cpu(p), on_cpu(q), rtol=1e-10, atol=1e-12, err_msg=n)


def test_dlpack_shares_memory_with_torch_cuda_tensors():
    t = torch.arange(12.0, device="cuda")
    g = genesis.from_dlpack(t)
    assert str(g.device).startswith("cuda") and g.data_ptr() == t.data_ptr()
    g.mul_(2)  # seen through the torch tensor: the same memory
    torch.cuda.synchronize()
    assert t.cpu().tolist() == [2.0 * i for i in range(12)]
    back = torch.from_dlpack(genesis.randn((3, 5), device="cuda"))
    assert back.device.type == "cuda" and tuple(back.shape) == (3, 5)
    src = genesis.ones((4,), device="cuda")
    assert torch.from_dlpack(src).data_ptr() == src.data_ptr()


def test_bf16_autocast_runs_matmul_in_bf16():
    genesis.manual_seed(5)
    a, b = genesis.randn((128, 256), device="cuda"), genesis.randn((256, 64), device="cuda")
    with genesis.amp.autocast("cuda", dtype=genesis.bfloat16):
        y = a @ b
    assert y.dtype == genesis.bfloat16
    ref = on_cpu(a) @ on_cpu(b)
    err = np.linalg.norm(on_cpu(y.float()) - ref) / np.linalg.norm(ref)
    assert 1e-5 < err < 2e-2  # rounded to bf16, and only that


def test_qwen_generation_matches_the_cpu():
    cfg = M.QwenConfig(model_type="qwen3", vocab_size=64, hidden_size=32, intermediate_size=64,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                       max_position_embeddings=256, qk_norm=True, dtype="float32", eos_token_ids=[])
    genesis.manual_seed(1)
    model = M.QwenForCausalLM(cfg)
    want = model.generate([[1, 2, 3], [4, 5]], max_new_tokens=8)
    ids = genesis.tensor([[1, 2, 3, 4]])
    logits_cpu = on_cpu(model(ids))
    model.to("cuda")
    assert str(next(iter(model.parameters())).device).startswith("cuda")
    np.testing.assert_allclose(on_cpu(model(ids.to("cuda"))), logits_cpu, rtol=1e-4, atol=1e-5)
    assert model.generate([[1, 2, 3], [4, 5]], max_new_tokens=8) == want
