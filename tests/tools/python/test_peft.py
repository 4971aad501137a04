"""genesis.peft (LoraConfig, get_peft_model, PeftModel) on the tiny Qwen2 fixture, against an independent PyTorch 1.13
oracle: the Qwen2 forward written here in float64 over the weights read from the safetensors files by hand, each
adapted projection computing W x + scale * B A x with A and B as torch leaves (so torch's autograd gives the
adapters' gradients).  Also PEFT's folder layout, save/load round trips, the C++ tools' adapters both ways, merging,
training and the errors."""
import json
import math
import os
import struct
import subprocess

import numpy as np
import pytest

import genesis
from genesis.peft import (AdapterNotFoundError, LoraConfig, NoMatchingPeftModuleError, PeftModel, get_peft_model,
                          get_peft_model_state_dict, set_peft_model_state_dict)

from conftest import BUILD_DIR, SOURCE_DIR, to_torch

torch = pytest.importorskip("torch")

FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "qwen", "qwen2-tiny")
PROJ = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
        "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}
ALL = list(PROJ)
_TORCH_DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16,
                 "I64": torch.int64, "I32": torch.int32}


# ---------------------------------------------------------------- the oracle
def read_safetensors(path):
    """name -> torch tensor, parsed by hand (8-byte header length, JSON header, little-endian data)."""
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
        t = torch.frombuffer(bytearray(body[lo:hi]), dtype=_TORCH_DTYPES[e["dtype"]]) if hi > lo else torch.empty(0)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def _rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


def oracle_logits(cfg, w, ids, lora=None):
    """Qwen2 (transformers' modeling_qwen2) in float64; lora: module path -> (A, B, scale), each adapted projection
    adding scale * (x A^T) B^T to x W^T."""
    lora = lora or {}
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
        h = _rms_norm(x, w[p + "input_layernorm.weight"], eps)

        def proj(name, inp):
            y = inp @ w[p + name + ".weight"].T
            if p + name + ".bias" in w:
                y = y + w[p + name + ".bias"]
            if p + name in lora:
                a, b, s = lora[p + name]
                y = y + ((inp @ a.T) @ b.T) * s
            return y

        q = proj("self_attn.q_proj", h).view(B, T, nh, D).transpose(1, 2)
        k = proj("self_attn.k_proj", h).view(B, T, nkv, D).transpose(1, 2)
        v = proj("self_attn.v_proj", h).view(B, T, nkv, D).transpose(1, 2)
        q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        k, v = k.repeat_interleave(nh // nkv, 1), v.repeat_interleave(nh // nkv, 1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        a = torch.softmax(s.masked_fill(~causal, float("-inf")), -1) @ v
        x = x + proj("self_attn.o_proj", a.transpose(1, 2).reshape(B, T, nh * D))
        h = _rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + proj("mlp.down_proj", torch.nn.functional.silu(proj("mlp.gate_proj", h)) * proj("mlp.up_proj", h))
    x = _rms_norm(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["model.embed_tokens.weight"]
    return x @ head.T


def oracle_loss(logits, labels):
    """transformers' causal-LM loss: mean cross entropy of logits[:, :-1] against labels[:, 1:], -100 ignored."""
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1),
                                             ignore_index=-100)


@pytest.fixture(scope="module")
def base():
    """(config.json, float64 weights, reference inputs) of the fixture, read without genesis."""
    cfg = json.load(open(os.path.join(FIXTURE, "config.json")))
    w = {k: v.to(torch.float64) for k, v in read_safetensors(os.path.join(FIXTURE, "model.safetensors")).items()}
    ref = read_safetensors(os.path.join(FIXTURE, "reference.safetensors"))
    return cfg, w, ref


def load(dtype="float64"):
    return genesis.models.AutoModelForCausalLM.from_pretrained(FIXTURE, dtype=dtype)


def rel(a, b):
    a = a.detach().numpy() if hasattr(a, "detach") else a
    b = b.detach().numpy() if hasattr(b, "detach") else b
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def adapters_of(pm):
    """module path -> (A Parameter, B Parameter) from the PeftModel's parameter names."""
    out = {}
    for name, p in pm.named_parameters():
        assert name.startswith("base_model.model.") and name.endswith(".default.weight"), name
        path, which = name[len("base_model.model."):-len(".default.weight")].rsplit(".", 1)
        out.setdefault(path, {})[which] = p
    return {k: (v["lora_A"], v["lora_B"]) for k, v in out.items()}


def set_random_adapters(pm, seed=1, scale_b=0.05):
    """Known A and B values (numpy's generator), written into the adapters in place."""
    rng = np.random.default_rng(seed)
    with genesis.no_grad():
        for path, (a, b) in adapters_of(pm).items():
            a.copy_(genesis.tensor(rng.standard_normal(tuple(a.shape)) * 0.1, dtype=a.dtype))
            b.copy_(genesis.tensor(rng.standard_normal(tuple(b.shape)) * scale_b, dtype=b.dtype))


def oracle_lora(pm, requires_grad=False):
    """module path -> (A, B, scale) as torch float64 leaves, from the PeftModel's values and config."""
    cfg = pm.peft_config["default"]
    s = cfg.lora_alpha / (math.sqrt(cfg.r) if cfg.use_rslora else cfg.r)
    return {path: (to_torch(a).double().requires_grad_(requires_grad), to_torch(b).double().requires_grad_(
        requires_grad), s) for path, (a, b) in adapters_of(pm).items()}


def expected_paths(cfg, targets):
    return [f"model.layers.{i}.{PROJ[t]}.{t}" for i in range(cfg["num_hidden_layers"]) for t in ALL if t in targets]


# ---------------------------------------------------------------- creation
def test_fresh_adapter_leaves_the_output_unchanged(base):
    cfg, w, ref = base
    ids = ref["input_ids"]
    model = load()
    before = model(genesis.tensor(ids.numpy())).logits
    assert rel(before, oracle_logits(cfg, w, ids)) < 1e-10  # the oracle itself is the fixture's model
    pm = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    ad = adapters_of(pm)
    assert list(ad) == expected_paths(cfg, ALL)
    for path, (a, b) in ad.items():
        fan_in = a.shape[1]
        assert a.dtype == genesis.float64 and a.requires_grad and b.requires_grad
        assert tuple(a.shape) == (4, fan_in) and b.shape[1] == 4
        assert float(b.abs().max().item()) == 0.0  # B starts at zero
        bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)): U(-1/sqrt(in), 1/sqrt(in))
        amax = float(a.abs().max().item())
        assert 0.5 * bound < amax <= bound, (path, amax, bound)
    after = pm(genesis.tensor(ids.numpy())).logits
    assert rel(after, before) < 1e-12
    assert all(not p.requires_grad for p in model.parameters())


def test_default_targets_are_peft_s_for_qwen2(base):
    cfg, _, _ = base
    pm = get_peft_model(load(), LoraConfig())
    assert list(adapters_of(pm)) == expected_paths(cfg, ["q_proj", "v_proj"])
    assert pm.peft_config["default"].r == 8 and pm.peft_config["default"].lora_alpha == 8
    assert pm.peft_config["default"].target_modules == {"q_proj", "v_proj"}


def test_init_lora_weights_false_and_gaussian():
    pm = get_peft_model(load(), LoraConfig(r=4, target_modules=["q_proj"], init_lora_weights=False))
    for a, b in adapters_of(pm).values():  # both as nn.Linear initialises them: U(-1/sqrt(in), 1/sqrt(in))
        assert 0.5 / math.sqrt(4) < float(b.abs().max().item()) <= 1 / math.sqrt(4)
        assert 0.5 / math.sqrt(a.shape[1]) < float(a.abs().max().item()) <= 1 / math.sqrt(a.shape[1])
    pm = get_peft_model(load(), LoraConfig(r=4, target_modules=["q_proj"], init_lora_weights="gaussian"))
    a = np.concatenate([a.detach().numpy().ravel() for a, _ in adapters_of(pm).values()])
    assert abs(a.std() - 1 / 4) < 0.03 and abs(a.mean()) < 0.04  # normal(0, 1/r), 512 draws: 4 standard errors
    assert all(float(b.abs().max().item()) == 0 for _, b in adapters_of(pm).values())


@pytest.mark.parametrize("targets,use_rslora", [("all-linear", False), (["q_proj", "v_proj", "down_proj"], True),
                                                (["self_attn.o_proj", "up_proj"], False),
                                                (r".*\.(k|gate)_proj", False)])
def test_known_adapters_match_the_oracle_with_gradients(base, targets, use_rslora):
    cfg, w, ref = base
    ids, labels = ref["input_ids"], ref["labels"]
    pm = get_peft_model(load(), LoraConfig(r=4, lora_alpha=6, target_modules=targets, use_rslora=use_rslora))
    if isinstance(targets, str) and targets != "all-linear":
        names = ["k_proj", "gate_proj"]
    elif targets == "all-linear":
        names = ALL
    else:
        names = [t.split(".")[-1] for t in targets]
    assert list(adapters_of(pm)) == expected_paths(cfg, names)
    set_random_adapters(pm)
    out = pm(genesis.tensor(ids.numpy()), labels=genesis.tensor(labels.numpy()))
    lora = oracle_lora(pm, requires_grad=True)
    want = oracle_logits(cfg, w, ids, lora)
    assert rel(out.logits, want) < 1e-10
    assert rel(out.logits, oracle_logits(cfg, w, ids)) > 1e-3  # the adapters do change the output
    want_loss = oracle_loss(want, labels)
    assert abs(out.loss.item() - want_loss.item()) <= 1e-10 * abs(want_loss.item())
    out.loss.backward()
    want_loss.backward()
    for path, (a, b) in adapters_of(pm).items():
        ta, tb, _ = lora[path]
        assert a.grad is not None and b.grad is not None, path
        assert rel(a.grad, ta.grad) < 1e-7, path
        assert rel(b.grad, tb.grad) < 1e-7, path
    base_model = pm.get_base_model()
    assert all(p.grad is None and not p.requires_grad for p in base_model.parameters())


def test_adapter_gradients_match_finite_differences(base):
    _, _, ref = base
    ids, labels = genesis.tensor(ref["input_ids"].numpy()), genesis.tensor(ref["labels"].numpy())
    pm = get_peft_model(load(), LoraConfig(r=2, lora_alpha=4, target_modules=["k_proj", "down_proj"]))
    set_random_adapters(pm)
    pm(ids, labels=labels).loss.backward()
    h = 1e-6
    for path, (a, b) in adapters_of(pm).items():
        for p in (a, b):
            for idx in ((0, 0), (1, p.shape[1] - 1)):
                with genesis.no_grad():
                    old = p[idx].item()
                    p[idx] = old + h
                    up = pm(ids, labels=labels).loss.item()
                    p[idx] = old - h
                    down = pm(ids, labels=labels).loss.item()
                    p[idx] = old
                fd, g = (up - down) / (2 * h), p.grad[idx].item()
                assert abs(fd - g) <= 1e-6 * max(abs(g), 1e-3), (path, idx, fd, g)


def test_one_sgd_step_moves_the_output_as_the_oracle_does(base):
    cfg, w, ref = base
    ids, labels = ref["input_ids"], ref["labels"]
    pm = get_peft_model(load(), LoraConfig(r=2, lora_alpha=4, target_modules=["v_proj", "up_proj"]))
    opt = genesis.optim.SGD(pm.parameters(), lr=0.5)
    pm(genesis.tensor(ids.numpy()), labels=genesis.tensor(labels.numpy())).loss.backward()
    lora = oracle_lora(pm, requires_grad=True)
    oracle_loss(oracle_logits(cfg, w, ids, lora), labels).backward()
    opt.step()
    with torch.no_grad():
        stepped = {k: (a - 0.5 * a.grad, b - 0.5 * b.grad, s) for k, (a, b, s) in lora.items()}
    assert any(float(b.abs().max()) > 0 for _, b, _ in stepped.values())  # B left zero
    got = pm(genesis.tensor(ids.numpy())).logits
    assert rel(got, oracle_logits(cfg, w, ids, stepped)) < 1e-10


def test_genesis_qwen_class_and_gradient_checkpointing(base):
    cfg, w, ref = base
    ids, labels = ref["input_ids"], ref["labels"]
    model = genesis.models.QwenForCausalLM.from_pretrained(FIXTURE)  # genesis' own calling conventions, float32
    model.to(genesis.float64)
    model.gradient_checkpointing_enable()
    pm = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    set_random_adapters(pm)
    pm.train()
    logits = pm(genesis.tensor(ids.numpy()))  # QwenForCausalLM returns the logits (its loss is float32)
    V = cfg["vocab_size"]
    loss = genesis.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V),
                                               genesis.tensor(labels[:, 1:].reshape(-1).numpy()), ignore_index=-100)
    lora = oracle_lora(pm, requires_grad=True)
    want_logits = oracle_logits(cfg, w, ids, lora)
    assert rel(logits, want_logits) < 1e-10
    want = oracle_loss(want_logits, labels)
    assert abs(loss.item() - want.item()) <= 1e-10 * abs(want.item())
    loss.backward()
    want.backward()
    for path, (a, b) in adapters_of(pm).items():
        assert rel(a.grad, lora[path][0].grad) < 1e-7 and rel(b.grad, lora[path][1].grad) < 1e-7, path
    dropped = get_peft_model(genesis.models.QwenForCausalLM.from_pretrained(FIXTURE),
                             LoraConfig(r=4, lora_dropout=0.1, target_modules=["q_proj"]))
    dropped.gradient_checkpointing_enable()
    dropped.train()
    with pytest.raises(NotImplementedError, match="gradient checkpointing"):
        dropped(genesis.tensor(ids.numpy()))
    with genesis.no_grad():
        dropped(genesis.tensor(ids.numpy()))  # no dropout without grad


# ---------------------------------------------------------------- parameters, modes
def test_parameters_are_the_adapters_and_counts_are_peft_s(base, capsys):
    cfg, _, _ = base
    model = load()
    n_base = sum(v.numel() for v in read_safetensors(os.path.join(FIXTURE, "model.safetensors")).values())
    pm = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear"))
    names = [n for n, _ in pm.named_parameters()]
    assert names[:2] == ["base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight",
                         "base_model.model.model.layers.0.self_attn.q_proj.lora_B.default.weight"]
    assert len(names) == 2 * 7 * cfg["num_hidden_layers"]
    H, I = cfg["hidden_size"], cfg["intermediate_size"]
    kv = cfg["num_key_value_heads"] * H // cfg["num_attention_heads"]
    per_layer = 4 * ((H + H) + (H + kv) * 2 + (H + H) + (H + I) * 2 + (I + H))
    trainable = per_layer * cfg["num_hidden_layers"]
    assert pm.get_nb_trainable_parameters() == (trainable, n_base + trainable)
    assert sum(p.numel() for p in pm.trainable_parameters) == trainable
    pm.print_trainable_parameters()
    assert capsys.readouterr().out == (f"trainable params: {trainable:,d} || all params: {n_base + trainable:,d} || "
                                       f"trainable%: {100 * trainable / (n_base + trainable):.4f}\n")
    sd = pm.state_dict()
    assert list(sd) == names
    assert pm.config.hidden_size == H  # attributes fall through to the base model
    assert pm.base_model.model.config.vocab_size == cfg["vocab_size"]


def test_dropout_runs_in_training_only(base):
    cfg, w, ref = base
    ids = genesis.tensor(ref["input_ids"].numpy())
    pm = get_peft_model(load(), LoraConfig(r=4, lora_alpha=8, lora_dropout=0.5, target_modules="all-linear"))
    set_random_adapters(pm)
    want = oracle_logits(cfg, w, ref["input_ids"], oracle_lora(pm))
    pm.eval()
    assert not pm.training and not pm.get_base_model().training
    assert rel(pm(ids).logits, want) < 1e-10
    pm.train()
    assert pm.training and pm.get_base_model().training
    a, b = pm(ids).logits, pm(ids).logits
    assert rel(a, want) > 1e-6 and rel(a, b) > 1e-6
    with genesis.no_grad():  # no dropout without grad (as the C++ adapters define it)
        assert rel(pm(ids).logits, want) < 1e-10


def test_disable_adapter_runs_the_base_model(base):
    cfg, w, ref = base
    ids = genesis.tensor(ref["input_ids"].numpy())
    pm = get_peft_model(load(), LoraConfig(r=4, target_modules="all-linear"))
    set_random_adapters(pm)
    adapted = oracle_logits(cfg, w, ref["input_ids"], oracle_lora(pm))
    with pm.disable_adapter():
        assert rel(pm(ids).logits, oracle_logits(cfg, w, ref["input_ids"])) < 1e-10
    assert rel(pm(ids).logits, adapted) < 1e-10
    with pytest.raises(KeyError):
        with pm.disable_adapter():
            raise KeyError("inside")
    assert rel(pm(ids).logits, adapted) < 1e-10  # enabled again after an exception


def test_generate_passes_through(base):
    cfg, w, ref = base
    pm = get_peft_model(load(), LoraConfig(r=4, target_modules="all-linear"))
    set_random_adapters(pm, scale_b=0.3)
    prompt = ref["input_ids"][:1, :5]
    out = pm.generate(genesis.tensor(prompt.numpy()), max_new_tokens=3, do_sample=False)
    seq = prompt.clone()
    lora = oracle_lora(pm)
    for _ in range(3):  # greedy by the oracle
        nxt = oracle_logits(cfg, w, seq, lora)[:, -1].argmax(-1, keepdim=True)
        seq = torch.cat([seq, nxt], 1)
    assert out.tolist() == seq.tolist()
    with pm.disable_adapter():
        base_out = pm.generate(genesis.tensor(prompt.numpy()), max_new_tokens=3, do_sample=False)
    seq = prompt.clone()
    for _ in range(3):
        seq = torch.cat([seq, oracle_logits(cfg, w, seq)[:, -1].argmax(-1, keepdim=True)], 1)
    assert base_out.tolist() == seq.tolist()
    assert out.tolist() != base_out.tolist()


def test_to_casts_the_base_model_and_the_adapters(base):
    cfg, w, ref = base
    ids = genesis.tensor(ref["input_ids"].numpy())
    pm = get_peft_model(load(), LoraConfig(r=4, target_modules="all-linear"))
    set_random_adapters(pm)
    pm.eval()
    want = oracle_logits(cfg, w, ref["input_ids"], oracle_lora(pm))
    assert pm.to(genesis.float32) is pm
    assert pm.get_base_model().dtype == genesis.float32
    assert all(p.dtype == genesis.float32 for p in pm.parameters())
    got = pm(ids).logits
    assert got.dtype == genesis.float32 and 1e-9 < rel(got, want) < 1e-5
    pm.bfloat16()
    assert pm.get_base_model().dtype == genesis.bfloat16
    assert all(p.dtype == genesis.float32 for p in pm.parameters())  # adapters stay float32 over bfloat16
    assert rel(pm(ids).logits.float(), want) < 5e-2


# ---------------------------------------------------------------- files
PEFT_KEYS = {"peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "target_modules", "bias", "use_rslora",
             "base_model_name_or_path", "fan_in_fan_out", "inference_mode", "init_lora_weights", "modules_to_save",
             "layers_to_transform", "layers_pattern", "rank_pattern", "alpha_pattern", "use_dora", "revision"}


def test_save_pretrained_writes_peft_s_folder_and_from_pretrained_reads_it(base, tmp_path):
    cfg, w, ref = base
    ids = genesis.tensor(ref["input_ids"].numpy())
    pm = get_peft_model(load(), LoraConfig(r=4, lora_alpha=12, lora_dropout=0.1, target_modules=["q_proj", "down_proj"],
                                           use_rslora=True))
    set_random_adapters(pm)
    pm.eval()
    want = pm(ids).logits
    pm.save_pretrained(str(tmp_path / "ad"))
    assert sorted(os.listdir(tmp_path / "ad")) == ["adapter_config.json", "adapter_model.safetensors"]
    acfg = json.load(open(tmp_path / "ad" / "adapter_config.json"))
    assert PEFT_KEYS <= set(acfg), PEFT_KEYS - set(acfg)
    assert acfg["peft_type"] == "LORA" and acfg["task_type"] == "CAUSAL_LM" and acfg["bias"] == "none"
    assert (acfg["r"], acfg["lora_alpha"], acfg["lora_dropout"], acfg["use_rslora"]) == (4, 12, 0.1, True)
    assert sorted(acfg["target_modules"]) == ["down_proj", "q_proj"]
    assert acfg["base_model_name_or_path"] == FIXTURE
    tensors = read_safetensors(str(tmp_path / "ad" / "adapter_model.safetensors"))
    keys = [f"base_model.model.{p}.lora_{x}.weight" for p in expected_paths(cfg, ["q_proj", "down_proj"])
            for x in "AB"]
    assert sorted(tensors) == sorted(keys)
    assert "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight" in tensors
    for path, (a, b) in adapters_of(pm).items():
        assert np.array_equal(tensors[f"base_model.model.{path}.lora_A.weight"].numpy(), a.detach().numpy())
        assert np.array_equal(tensors[f"base_model.model.{path}.lora_B.weight"].numpy(), b.detach().numpy())
    assert sorted(get_peft_model_state_dict(pm)) == sorted(keys)

    back = PeftModel.from_pretrained(load(), str(tmp_path / "ad"))
    assert not back.training
    assert all(not p.requires_grad for p in back.parameters()) and len(list(back.parameters())) == len(keys)
    got = back(ids).logits
    assert np.array_equal(got.detach().numpy(), want.detach().numpy())
    assert rel(got, oracle_logits(cfg, w, ref["input_ids"], oracle_lora(back))) < 1e-10
    c = back.peft_config["default"]
    assert (c.r, c.lora_alpha, c.lora_dropout, c.use_rslora, c.target_modules) == (4, 12, 0.1, True,
                                                                                   {"q_proj", "down_proj"})
    assert LoraConfig.from_pretrained(str(tmp_path / "ad")) == c
    trainable = PeftModel.from_pretrained(load().train(), tmp_path / "ad", is_trainable=True)
    assert all(p.requires_grad for p in trainable.parameters())
    assert trainable.training and trainable._adapters.training  # dropout on, as the model's mode says

    # set_peft_model_state_dict copies PEFT-named weights in
    fresh = get_peft_model(load(), LoraConfig(r=4, lora_alpha=12, target_modules=["q_proj", "down_proj"],
                                              use_rslora=True))
    set_peft_model_state_dict(fresh, genesis.load_file(str(tmp_path / "ad" / "adapter_model.safetensors")))
    fresh.eval()
    assert np.array_equal(fresh(ids).logits.detach().numpy(), want.detach().numpy())


def test_a_folder_as_peft_writes_it_loads_and_keeps_its_fields(base, tmp_path):
    cfg, w, ref = base
    pm = get_peft_model(load(), LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    set_random_adapters(pm)
    pm.save_pretrained(tmp_path / "ad")
    peft_written = {  # adapter_config.json as PEFT 0.15 writes it (target_modules in set order, fields genesis ignores)
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "Qwen/Qwen2.5-0.5B", "bias": "none",
        "corda_config": None, "eva_config": None, "exclude_modules": None, "fan_in_fan_out": False,
        "inference_mode": True, "init_lora_weights": True, "layer_replication": None, "layers_pattern": None,
        "layers_to_transform": None, "loftq_config": {}, "lora_alpha": 16, "lora_bias": False, "lora_dropout": 0.05,
        "megatron_config": None, "megatron_core": "megatron.core", "modules_to_save": None, "peft_type": "LORA",
        "r": 4, "rank_pattern": {}, "revision": None, "target_modules": ["v_proj", "q_proj"], "task_type": "CAUSAL_LM",
        "trainable_token_indices": None, "use_dora": False, "use_rslora": False}
    json.dump(peft_written, open(tmp_path / "ad" / "adapter_config.json", "w"), indent=2)
    back = PeftModel.from_pretrained(load(), tmp_path / "ad")
    c = back.peft_config["default"]
    assert (c.r, c.lora_alpha, c.lora_dropout, c.target_modules) == (4, 16, 0.05, {"q_proj", "v_proj"})
    assert list(adapters_of(back)) == expected_paths(cfg, ["q_proj", "v_proj"])
    assert rel(back(genesis.tensor(ref["input_ids"].numpy())).logits,
               oracle_logits(cfg, w, ref["input_ids"], oracle_lora(pm))) < 1e-10
    back.save_pretrained(tmp_path / "again")
    again = json.load(open(tmp_path / "again" / "adapter_config.json"))
    assert again["megatron_core"] == "megatron.core" and again["loftq_config"] == {}
    assert again["base_model_name_or_path"] == "Qwen/Qwen2.5-0.5B" and again["lora_dropout"] == 0.05
    # LoraConfig alone: PEFT's defaults, save_pretrained / from_pretrained
    d = LoraConfig()
    assert (d.r, d.lora_alpha, d.lora_dropout, d.target_modules, d.bias, d.use_rslora) == (8, 8, 0.0, None, "none",
                                                                                           False)
    d = LoraConfig(r=2, target_modules=["k_proj"], task_type="CAUSAL_LM")
    d.save_pretrained(tmp_path / "cfg")
    assert LoraConfig.from_pretrained(tmp_path / "cfg") == d
    with pytest.raises(NotImplementedError, match="task_type"):
        get_peft_model(load(), LoraConfig(task_type="SEQ_CLS"))


def test_from_pretrained_with_a_given_config(base, tmp_path):
    cfg, w, ref = base
    pm = get_peft_model(load(), LoraConfig(r=2, lora_alpha=4, target_modules=["k_proj"]))
    set_random_adapters(pm)
    pm.save_pretrained(tmp_path)
    other = PeftModel.from_pretrained(load(), tmp_path, config=LoraConfig(r=2, lora_alpha=8, target_modules=["k_proj"]))
    assert other.peft_config["default"].lora_alpha == 8
    assert rel(other(genesis.tensor(ref["input_ids"].numpy())).logits,
               oracle_logits(cfg, w, ref["input_ids"], oracle_lora(other))) < 1e-10
    assert oracle_lora(other)["model.layers.0.self_attn.k_proj"][2] == 4.0


def _tool(name):
    path = os.path.join(BUILD_DIR, "bin", name)
    if not os.path.isfile(path):
        pytest.skip(f"{name} is not built")
    return path


def test_an_adapter_the_cpp_tools_wrote_loads(base, tmp_path):
    cfg, w, ref = base
    subprocess.run([_tool("serve_test_model"), "--adapter", FIXTURE, str(tmp_path / "ad")], check=True,
                   capture_output=True)
    pm = PeftModel.from_pretrained(load(), tmp_path / "ad")
    tensors = {k: v.double() for k, v in read_safetensors(str(tmp_path / "ad" / "adapter_model.safetensors")).items()}
    acfg = json.load(open(tmp_path / "ad" / "adapter_config.json"))
    s = acfg["lora_alpha"] / (math.sqrt(acfg["r"]) if acfg.get("use_rslora") else acfg["r"])
    lora = {k[len("base_model.model."):-len(".lora_A.weight")]: (v, tensors[k.replace("lora_A", "lora_B")], s)
            for k, v in tensors.items() if k.endswith(".lora_A.weight")}
    assert sorted(lora) == sorted(adapters_of(pm)) and len(lora) > 0
    assert any(float(b.abs().max()) > 0 for _, b, _ in lora.values())
    assert rel(pm(genesis.tensor(ref["input_ids"].numpy())).logits, oracle_logits(cfg, w, ref["input_ids"], lora)) \
        < 1e-10


def test_genesis_convert_merges_an_adapter_python_wrote(base, tmp_path):
    _, _, ref = base
    ids = genesis.tensor(ref["input_ids"].numpy())
    pm = get_peft_model(load("float32"), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    set_random_adapters(pm)
    pm.save_pretrained(tmp_path / "ad")
    pm.eval()
    want = pm(ids).logits
    subprocess.run([_tool("genesis"), "convert", "--model", FIXTURE, "--adapter", str(tmp_path / "ad"), "--out",
                    str(tmp_path / "merged")], check=True, capture_output=True)
    merged = genesis.models.AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"))
    assert rel(merged(ids).logits, want) < 1e-6
    ours = pm.merge_and_unload()
    for (n, p), (m, q) in zip(ours.named_parameters(), merged.named_parameters()):
        assert n == m and np.array_equal(p.detach().numpy(), q.detach().numpy()), n


# ---------------------------------------------------------------- merging, training
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-12)])
def test_merge_and_unload_equals_the_adapted_model(base, dtype, tol):
    cfg, w, ref = base
    ids = genesis.tensor(ref["input_ids"].numpy())
    model = load(dtype)
    pm = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    set_random_adapters(pm)
    pm.eval()
    adapted = pm(ids).logits
    lora = oracle_lora(pm)
    merged = pm.merge_and_unload()
    assert merged is model and list(pm.parameters()) == []
    assert rel(merged(ids).logits, adapted) < tol
    if dtype == "float64":
        assert rel(merged(ids).logits, oracle_logits(cfg, w, ref["input_ids"], lora)) < 1e-10
        sd = merged.state_dict()
        for path, (a, b, s) in lora.items():
            assert rel(sd[path + ".weight"], w[path + ".weight"] + (b @ a) * s) < 1e-13, path
    with pytest.raises(ValueError, match="merged or unloaded"):
        with pm.disable_adapter():
            pass
    get_peft_model(merged, LoraConfig(r=2, target_modules=["q_proj"]))  # the model takes new adapters


def test_unload_restores_the_base_model(base):
    cfg, w, ref = base
    model = load()
    pm = get_peft_model(model, LoraConfig(r=4, target_modules="all-linear"))
    set_random_adapters(pm)
    assert pm.unload() is model
    assert rel(model(genesis.tensor(ref["input_ids"].numpy())).logits, oracle_logits(cfg, w, ref["input_ids"])) < 1e-10


def test_training_lowers_the_loss_and_leaves_the_base_bit_identical(base):
    _, _, ref = base
    ids, labels = genesis.tensor(ref["input_ids"].numpy()), genesis.tensor(ref["labels"].numpy())
    model = load("float32")
    before = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    pm = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    pm.train()
    opt = genesis.optim.AdamW(pm.parameters(), lr=1e-2, weight_decay=0.01)
    assert sum(len(g["params"]) for g in opt.param_groups) == 2 * 7 * 2
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = pm(ids, labels=labels).loss
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.05, losses
    assert all(x > y for x, y in zip(losses, losses[1:])), losses
    for n, p in model.named_parameters():
        assert p.grad is None, n
        assert before[n].tobytes() == p.detach().numpy().tobytes(), n


# ---------------------------------------------------------------- errors
def test_errors(base, tmp_path):
    with pytest.raises(NoMatchingPeftModuleError) as e:
        get_peft_model(load(), LoraConfig(target_modules=["qkv", "dense"]))
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert "not found in the base model" in msg and "q_proj" in msg and "down_proj" in msg and "dense" in msg
    with pytest.raises(ValueError, match="is not supported"):
        get_peft_model(load(), LoraConfig(target_modules=["input_layernorm"]))
    with pytest.raises(NotImplementedError, match="every layer"):
        get_peft_model(load(), LoraConfig(target_modules=["q_proj"], layers_to_transform=[0]))
    with pytest.raises(ValueError, match="positive integer"):
        get_peft_model(load(), LoraConfig(r=0))
    with pytest.raises(ValueError, match="dropout probability"):
        get_peft_model(load(), LoraConfig(lora_dropout=1.0))
    with pytest.raises(NotImplementedError, match="bias"):
        get_peft_model(load(), LoraConfig(bias="all"))
    with pytest.raises(NotImplementedError, match="modules_to_save"):
        get_peft_model(load(), LoraConfig(modules_to_save=["lm_head"]))
    with pytest.raises(TypeError, match="unexpected keyword argument 'rank'"):
        LoraConfig(rank=4)
    with pytest.raises(TypeError, match="causal LM"):
        get_peft_model(genesis.nn.Linear(2, 2), LoraConfig())
    model = load()
    pm = get_peft_model(model, LoraConfig(target_modules=["q_proj"]))
    with pytest.raises(ValueError, match="already"):
        get_peft_model(model, LoraConfig(target_modules=["q_proj"]))
    with pytest.raises(ValueError, match="already is a PeftModel"):
        get_peft_model(pm, LoraConfig())
    # a failed attach leaves the model as it was
    fresh = load()
    with pytest.raises(NoMatchingPeftModuleError):
        get_peft_model(fresh, LoraConfig(target_modules=["nope"]))
    assert all(p.requires_grad for p in fresh.parameters())

    with pytest.raises(OSError, match="Can't find 'adapter_config.json'") as e:
        PeftModel.from_pretrained(load(), str(tmp_path / "missing"))
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, AdapterNotFoundError)
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError, match="has no adapter_config.json"):
        PeftModel.from_pretrained(load(), tmp_path / "empty")
    pm.save_pretrained(tmp_path / "ad")
    os.remove(tmp_path / "ad" / "adapter_model.safetensors")
    with pytest.raises(OSError):
        PeftModel.from_pretrained(load(), tmp_path / "ad")
    open(tmp_path / "ad" / "adapter_model.bin", "wb").close()
    with pytest.raises(RuntimeError, match="adapter_model.bin .pickle. is not supported"):
        PeftModel.from_pretrained(load(), tmp_path / "ad")
    # an adapter for another shape (rank in the config differs from the file's)
    pm.save_pretrained(tmp_path / "ad2")
    acfg = json.load(open(tmp_path / "ad2" / "adapter_config.json"))
    acfg["r"] = 4
    json.dump(acfg, open(tmp_path / "ad2" / "adapter_config.json", "w"))
    target = load()
    with pytest.raises(RuntimeError, match="shape"):
        PeftModel.from_pretrained(target, tmp_path / "ad2")
    get_peft_model(target, LoraConfig(target_modules=["q_proj"]))  # the failed load left no adapters behind
    with pytest.raises(ValueError, match="should be a directory, not a file"):
        pm.save_pretrained(tmp_path / "ad2" / "adapter_config.json")
    with pytest.raises(NotImplementedError, match="safe_serialization"):
        pm.save_pretrained(tmp_path / "ad3", safe_serialization=False)
