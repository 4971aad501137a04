"""Recomputes a LoRA-adapted Qwen2 model's logits from the files alone, independently of Genesis.

Usage: test_lora_peft_math.py BASE_DIR WORK_DIR.  BASE_DIR holds config.json and model.safetensors; WORK_DIR holds
adapter/ (adapter_config.json, adapter_model.safetensors as PEFT names them) and expected.safetensors (input_ids and
the logits Genesis computed).  The safetensors files are parsed by hand, each targeted weight becomes
W + B @ A * scale (scale = lora_alpha / r, or / sqrt(r) with use_rslora) and a float64 PyTorch forward written here
gives the logits.  The same forward without the adapter is first checked against the base fixture's
reference logits (made by transformers), so the forward itself is tested too.  Exits non-zero on a mismatch.
"""
import json
import math
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16,
          "I64": torch.int64, "I32": torch.int32}


def read_safetensors(path):
    """name -> tensor, read from the 8-byte header length, the JSON header and the raw little-endian data."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        t = torch.frombuffer(bytearray(body[lo:hi]), dtype=DTYPES[e["dtype"]]) if hi > lo else torch.empty(0)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def forward(cfg, w, ids):
    """Qwen2 decoder (transformers' modeling_qwen2) in float64: ids (B, T) -> logits (B, T, V)."""
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg.get("head_dim") or H // nh
    eps = cfg["rms_norm_eps"]
    theta = cfg.get("rope_theta") or cfg.get("rope_parameters", {}).get("rope_theta", 10000.0)
    B, T = ids.shape
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    x = w["model.embed_tokens.weight"][ids]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(name, inp):
            y = inp @ w[p + name + ".weight"].T
            return y + w[p + name + ".bias"] if p + name + ".bias" in w else y

        q = proj("self_attn.q_proj", h).view(B, T, nh, D).transpose(1, 2)
        k = proj("self_attn.k_proj", h).view(B, T, nkv, D).transpose(1, 2)
        v = proj("self_attn.v_proj", h).view(B, T, nkv, D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(nh // nkv, 1), v.repeat_interleave(nh // nkv, 1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        a = torch.softmax(s.masked_fill(~causal, float("-inf")), -1) @ v
        x = x + proj("self_attn.o_proj", a.transpose(1, 2).reshape(B, T, nh * D))
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + proj("mlp.down_proj", torch.nn.functional.silu(proj("mlp.gate_proj", h)) * proj("mlp.up_proj", h))
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["model.embed_tokens.weight"]
    return x @ head.T


def main(base_dir, work_dir):
    cfg = json.load(open(f"{base_dir}/config.json"))
    w = {k: v.to(torch.float64) for k, v in read_safetensors(f"{base_dir}/model.safetensors").items()}
    ref = read_safetensors(f"{base_dir}/reference.safetensors")
    base = forward(cfg, w, ref["input_ids"])
    err = (base - ref["logits"].to(torch.float64)).abs().max().item() / ref["logits"].abs().max().item()
    if err > 1e-5:
        sys.exit(f"the independent forward misses transformers' base logits: relative {err:.3g}")

    acfg = json.load(open(f"{work_dir}/adapter/adapter_config.json"))
    assert acfg["peft_type"] == "LORA" and acfg["bias"] == "none" and not acfg["fan_in_fan_out"], acfg
    r = acfg["r"]
    scale = acfg["lora_alpha"] / (math.sqrt(r) if acfg.get("use_rslora") else r)
    ad = {k: v.to(torch.float64) for k, v in read_safetensors(f"{work_dir}/adapter/adapter_model.safetensors").items()}
    prefix = "base_model.model."
    merged = 0
    for key in ad:
        assert key.startswith(prefix) and (key.endswith(".lora_A.weight") or key.endswith(".lora_B.weight")), key
        if not key.endswith(".lora_A.weight"):
            continue
        module = key[len(prefix):-len(".lora_A.weight")]
        assert module.split(".")[-1] in acfg["target_modules"], module
        A, Bm = ad[key], ad[prefix + module + ".lora_B.weight"]
        assert A.shape[0] == r and Bm.shape[1] == r, (A.shape, Bm.shape)
        w[module + ".weight"] = w[module + ".weight"] + Bm @ A * scale
        merged += 1
    exp = read_safetensors(f"{work_dir}/expected.safetensors")
    got = forward(cfg, w, exp["input_ids"])
    want = exp["logits"].to(torch.float64)
    err = (got - want).abs().max().item() / want.abs().max().item()
    print(f"{merged} adapters merged; adapted logits relative error {err:.3g}")
    if err > 1e-10:
        sys.exit(f"adapted logits differ from Genesis': relative {err:.3g}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
