"""The decoder's model families from Python (genesis.models.QwenForCausalLM.from_pretrained over Llama, Mistral,
Gemma 2 and Gemma 3 folders) against transformers: tests/fixtures/families/<name> hold the logits, loss and greedy
generation transformers computed in float64 (make_families.py there)."""
import json
import os
import struct

import numpy as np
import pytest

import genesis
import genesis.models as M
from conftest import SOURCE_DIR

FAMILIES = ["llama", "llama-yarn", "llama-linear", "llama-dynamic", "mistral", "gemma2", "gemma3"]


def fixture(name):
    return os.path.join(SOURCE_DIR, "tests", "fixtures", "families", name)


def read_safetensors(path):
    """The tensors of a float32/int64 safetensors file as NumPy arrays (the fixtures' reference outputs)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    kinds = {"F32": np.float32, "I64": np.int64}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(data[8 + n + s:8 + n + e], dtype=kinds[v["dtype"]]).reshape(v["shape"])
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_family_matches_transformers(name):
    model = M.QwenForCausalLM.from_pretrained(fixture(name), dtype=genesis.float32)
    ref = read_safetensors(os.path.join(fixture(name), "reference.safetensors"))
    ids = genesis.tensor(ref["input_ids"].tolist(), dtype=genesis.int64)
    want = ref["logits"].astype(np.float64)
    got = model(ids).detach().numpy().astype(np.float64)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    loss = model(ids, labels=genesis.tensor(ref["labels"].tolist(), dtype=genesis.int64))
    assert abs(loss.item() - float(ref["loss"][0])) <= 1e-5 * abs(float(ref["loss"][0]))
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    for key, g in ref.items():
        if key.startswith("grad."):
            g_got = grads[key[len("grad."):]].numpy().astype(np.float64)
            assert np.abs(g_got - g).max() <= 1e-4 * np.abs(g).max(), key
    # Greedy generation after the forward, as the fixture's (dynamic rope keeps the longest sequence seen).
    prompt, full = ref["generate.prompt"][0].tolist(), ref["generate.output"][0].tolist()
    new = model.generate([prompt], max_new_tokens=len(full) - len(prompt), ignore_eos=True)
    assert new[0] == full[len(prompt):]


def test_a_switch_flipped_in_the_config_breaks_the_match(tmp_path):
    """Negative control: Gemma 2's folder read with Mistral's reading of the window (every layer sliding) and
    without soft-capping is another model; the comparison above fails for it."""
    src = fixture("gemma2")
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["layer_types"] = ["sliding_attention"] * cfg["num_hidden_layers"]
    cfg["attn_logit_softcapping"] = None
    for f in ("model.safetensors", "generation_config.json"):
        os.symlink(os.path.join(src, f), tmp_path / f)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model = M.QwenForCausalLM.from_pretrained(str(tmp_path), dtype=genesis.float32)
    ref = read_safetensors(os.path.join(src, "reference.safetensors"))
    got = model(genesis.tensor(ref["input_ids"].tolist(), dtype=genesis.int64)).detach().numpy()
    assert np.abs(got - ref["logits"]).max() > 1e-4 * np.abs(ref["logits"]).max()


def test_unsupported_config_value_names_the_field(tmp_path):
    cfg = json.load(open(os.path.join(fixture("llama"), "config.json")))
    cfg["rope_parameters"]["rope_type"] = "longrope"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    os.symlink(os.path.join(fixture("llama"), "model.safetensors"), tmp_path / "model.safetensors")
    with pytest.raises(Exception, match="rope_parameters.rope_type"):
        M.QwenForCausalLM.from_pretrained(str(tmp_path))


# ---- every family through AutoModelForCausalLM (transformers' API), Qwen3-MoE included
ALL_FAMILIES = FAMILIES + ["qwen3-moe"]
CLASSES = {"llama": "LlamaForCausalLM", "llama-yarn": "LlamaForCausalLM", "llama-linear": "LlamaForCausalLM",
           "llama-dynamic": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "gemma2": "Gemma2ForCausalLM",
           "gemma3": "Gemma3ForCausalLM", "qwen3-moe": "Qwen3MoeForCausalLM"}


def config_json(name):
    with open(os.path.join(fixture(name), "config.json")) as f:
        return json.load(f)


def reference_grad(params, key):
    """The genesis gradient of a reference gradient's name; transformers 5 fuses each sparse layer's experts
    (experts.gate_up_proj (E, 2I, H), experts.down_proj (E, H, I)), genesis keeps one SwiGLU per expert."""

    def g(k):  # an expert no token was routed to has no gradient: zeros, as in the fused tensor
        p = params[k]
        return p.grad.numpy().astype(np.float64) if p.grad is not None else np.zeros(tuple(p.shape))

    name = key[len("grad."):]
    if name in params:
        return g(name)
    prefix, _, fused = name.rpartition(".")
    n = sum(1 for k in params if k.startswith(prefix + ".") and k.endswith(".gate_proj.weight"))
    assert n > 0, key
    if fused == "gate_up_proj":
        return np.stack([np.concatenate([g(f"{prefix}.{e}.gate_proj.weight"), g(f"{prefix}.{e}.up_proj.weight")])
                         for e in range(n)])
    assert fused == "down_proj", key
    return np.stack([g(f"{prefix}.{e}.down_proj.weight") for e in range(n)])


@pytest.mark.parametrize("name", ALL_FAMILIES)
def test_auto_model_loads_the_family_and_matches_transformers(name):
    model = M.AutoModelForCausalLM.from_pretrained(fixture(name), dtype="float32")
    assert type(model) is getattr(M, CLASSES[name])
    assert type(model).__name__ == config_json(name)["architectures"][0]
    assert isinstance(model, M.Qwen2ForCausalLM) and model.dtype == genesis.float32
    ref = read_safetensors(os.path.join(fixture(name), "reference.safetensors"))
    ids = genesis.tensor(ref["input_ids"].tolist(), dtype=genesis.int64)
    out = model(ids, labels=genesis.tensor(ref["labels"].tolist(), dtype=genesis.int64))
    want = ref["logits"].astype(np.float64)
    got = out.logits.detach().numpy().astype(np.float64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    assert abs(out.loss.item() - float(ref["loss"][0])) <= 1e-5 * abs(float(ref["loss"][0]))
    out.loss.backward()
    params = dict(model.named_parameters())
    checked = 0
    for key, g in ref.items():
        if key.startswith("grad."):
            g_got = reference_grad(params, key)
            assert g_got.shape == g.shape, key
            assert np.abs(g_got - g).max() <= 1e-4 * np.abs(g).max(), key
            checked += 1
    assert checked > 0
    # Greedy generation (transformers' generate: prompt + new ids), after the forward as the fixture's.
    prompt, full = ref["generate.prompt"], ref["generate.output"][0].tolist()
    seqs = model.generate(genesis.tensor(prompt.tolist(), dtype=genesis.int64),
                          max_new_tokens=len(full) - prompt.shape[1], do_sample=False)
    assert seqs.tolist() == [full]


def expected_config(cfg):
    """The QwenConfig fields config.json implies (transformers 5's spellings and defaults)."""
    rp = cfg.get("rope_parameters") or {}
    full = rp.get("full_attention", rp)
    mt = cfg["model_type"]
    n = cfg["num_hidden_layers"]
    window = cfg.get("sliding_window") or 0
    layer_types = cfg.get("layer_types") or (["sliding_attention"] * n if window else [])
    gemma = mt.startswith("gemma")
    return {
        "model_type": mt, "vocab_size": cfg["vocab_size"], "hidden_size": cfg["hidden_size"],
        "intermediate_size": cfg["intermediate_size"], "num_hidden_layers": n,
        "num_attention_heads": cfg["num_attention_heads"], "num_key_value_heads": cfg["num_key_value_heads"],
        "head_dim": cfg["head_dim"], "max_position_embeddings": cfg["max_position_embeddings"],
        "rms_norm_eps": cfg["rms_norm_eps"], "tie_word_embeddings": cfg["tie_word_embeddings"],
        "attention_bias": cfg.get("attention_bias", False), "qk_norm": mt in ("qwen3", "qwen3_moe", "gemma3_text"),
        "rope_theta": full["rope_theta"], "rope_local_theta": rp.get("sliding_attention", {}).get("rope_theta", 0.0),
        "rope_scaling.rope_type": full.get("rope_type", "default"), "rope_scaling.factor": full.get("factor", 1.0),
        "rope_scaling.low_freq_factor": full.get("low_freq_factor", 1.0),
        "rope_scaling.high_freq_factor": full.get("high_freq_factor", 4.0),
        "rope_scaling.original_max_position_embeddings": full.get("original_max_position_embeddings", 0),
        "hidden_act": cfg.get("hidden_act", cfg.get("hidden_activation")), "norm_offset": gemma,
        "sandwich_norms": gemma, "scale_embeddings": gemma,
        "query_pre_attn_scalar": cfg.get("query_pre_attn_scalar") or 0.0,
        "attn_logit_softcapping": cfg.get("attn_logit_softcapping") or 0.0,
        "final_logit_softcapping": cfg.get("final_logit_softcapping") or 0.0,
        "sliding_window": window, "layer_types": layer_types,
        "num_experts": cfg.get("num_local_experts", cfg.get("num_experts", 0)),
        "num_experts_per_tok": cfg.get("num_experts_per_tok", 0),
        "moe_intermediate_size": cfg.get("moe_intermediate_size", 0),
        "decoder_sparse_step": cfg.get("decoder_sparse_step", 1), "mlp_only_layers": cfg.get("mlp_only_layers", []),
        "norm_topk_prob": cfg.get("norm_topk_prob", False),
        "router_aux_loss_coef": cfg.get("router_aux_loss_coef", 0.001),
        "output_router_logits": cfg.get("output_router_logits", False),
    }


def field(config, key):
    obj = config
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", ALL_FAMILIES)
def test_config_fields_equal_config_json(name):
    cfg = config_json(name)
    want = expected_config(cfg)
    for config in (M.AutoConfig.from_pretrained(fixture(name)),
                   M.AutoModelForCausalLM.from_pretrained(fixture(name)).config):
        assert isinstance(config, M.QwenConfig)
        got = {k: field(config, k) for k in want}
        assert got == want
        for layer in range(cfg["num_hidden_layers"]):
            assert config.is_sliding(layer) == (want["layer_types"][layer] == "sliding_attention" if want[
                "sliding_window"] else False)
            sparse = want["num_experts"] > 0 and layer not in want["mlp_only_layers"] and (
                layer + 1) % want["decoder_sparse_step"] == 0
            assert config.is_sparse_layer(layer) == sparse
    assert isinstance(M.AutoConfig.from_pretrained(fixture(name)).rope_scaling, M.RopeParameters)


def test_config_family_fields_are_writable_and_documented():
    c = M.QwenConfig()
    assert (c.sliding_window, c.layer_types, c.num_experts, c.rope_scaling.rope_type) == (0, [], 0, "default")
    c.num_hidden_layers = 2
    c.sliding_window = 4
    c.layer_types = ["sliding_attention", "full_attention"]
    c.rope_scaling.rope_type = "linear"
    c.rope_scaling.factor = 2.0
    c.rope_scaling.attention_factor = None
    c.hidden_act = "gelu_pytorch_tanh"
    c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size, c.mlp_only_layers = 4, 2, 8, [1]
    assert (c.is_sliding(0), c.is_sliding(1), c.is_sparse_layer(0), c.is_sparse_layer(1)) == (True, False, True, False)
    assert (c.rope_scaling.rope_type, c.rope_scaling.factor, c.rope_scaling.attention_factor) == ("linear", 2.0, None)
    assert (c.hidden_act, c.num_experts_per_tok, c.moe_intermediate_size) == ("gelu_pytorch_tanh", 2, 8)
    for k in ("rope_scaling", "rope_local_theta", "norm_offset", "sandwich_norms", "hidden_act", "scale_embeddings",
              "query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping", "sliding_window",
              "layer_types", "num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step",
              "mlp_only_layers", "norm_topk_prob", "router_aux_loss_coef", "output_router_logits"):
        assert getattr(M.QwenConfig, k).__doc__, k


def copy_with_config(src, dst, **changes):
    cfg = json.load(open(os.path.join(src, "config.json")))
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    for f in ("model.safetensors", "generation_config.json"):
        os.symlink(os.path.join(src, f), dst / f)
    (dst / "config.json").write_text(json.dumps(cfg))
    return str(dst)


def test_unknown_model_type_is_a_value_error_naming_it(tmp_path):
    path = copy_with_config(fixture("llama"), tmp_path, model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"])
    for load in (M.AutoModelForCausalLM.from_pretrained, M.AutoConfig.from_pretrained):
        with pytest.raises(ValueError, match="'gpt_neox'") as e:
            load(path)
        for supported in ("qwen2", "qwen3", "qwen3_moe", "llama", "mistral", "gemma2", "gemma3_text"):
            assert supported in str(e.value)


def test_missing_model_type_names_the_architecture(tmp_path):
    path = copy_with_config(fixture("mistral"), tmp_path, model_type=None)
    with pytest.raises(ValueError, match="model_type 'mistral'"):
        M.AutoModelForCausalLM.from_pretrained(path)


def test_family_class_refuses_another_family():
    assert type(M.Gemma2ForCausalLM.from_pretrained(fixture("gemma2"))) is M.Gemma2ForCausalLM
    with pytest.raises(ValueError, match="gemma2 model, not LlamaForCausalLM"):
        M.LlamaForCausalLM.from_pretrained(fixture("gemma2"))


@pytest.mark.parametrize("name", ["gemma2", "qwen3-moe"])
def test_from_config_builds_the_family_class(name):
    config = M.AutoConfig.from_pretrained(fixture(name))
    model = M.AutoModelForCausalLM.from_config(config, dtype="float32")
    assert type(model) is getattr(M, CLASSES[name])
    names = {n for n, _ in model.named_parameters()}
    assert names == {n for n, _ in M.AutoModelForCausalLM.from_pretrained(fixture(name)).named_parameters()}


def test_moe_loss_with_router_logits_matches_transformers(tmp_path):
    """output_router_logits in config.json: the loss adds router_aux_loss_coef times the load-balancing loss,
    and the output carries aux_loss (transformers' MoeCausalLMOutputWithPast)."""
    src = fixture("qwen3-moe")
    ref = read_safetensors(os.path.join(src, "reference.safetensors"))
    ids = genesis.tensor(ref["input_ids"].tolist(), dtype=genesis.int64)
    labels = genesis.tensor(ref["labels"].tolist(), dtype=genesis.int64)
    plain = M.AutoModelForCausalLM.from_pretrained(src, dtype="float32")(ids, labels=labels)
    assert isinstance(plain, M.MoeCausalLMOutputWithPast) and plain.aux_loss is None
    model = M.AutoModelForCausalLM.from_pretrained(copy_with_config(src, tmp_path, output_router_logits=True),
                                                   dtype="float32")
    out = model(ids, labels=labels)
    aux, with_aux = float(ref["router_aux_loss"][0]), float(ref["loss_with_aux"][0])
    assert abs(out.aux_loss.item() - aux) <= 1e-5 * abs(aux)
    assert abs(out.loss.item() - with_aux) <= 1e-5 * abs(with_aux)
    assert abs(with_aux - float(ref["loss"][0])) > 1e-4 * abs(with_aux)  # the aux term is visible at this tolerance
    assert abs(out.loss.item() - plain.loss.item()) > 1e-4 * abs(with_aux)


@pytest.mark.parametrize("name", ALL_FAMILIES)
def test_auto_model_in_float64_matches_transformers_float64_logits(name):
    """Loaded in float64, every family's logits equal transformers' float64 ones to their float32 storage."""
    model = M.AutoModelForCausalLM.from_pretrained(fixture(name), dtype="float64")
    assert model.dtype == genesis.float64
    ref = read_safetensors(os.path.join(fixture(name), "reference.safetensors"))
    got = model(genesis.tensor(ref["input_ids"].tolist(), dtype=genesis.int64)).logits.detach().numpy()
    assert got.dtype == np.float64
    assert np.abs(got - ref["logits"]).max() <= 1e-6 * np.abs(ref["logits"]).max()


def test_architectures_that_contradict_model_type_are_a_value_error(tmp_path):
    path = copy_with_config(fixture("llama"), tmp_path, architectures=["Gemma2ForCausalLM"])
    with pytest.raises(ValueError, match="architectures"):
        M.AutoModelForCausalLM.from_pretrained(path)


@pytest.mark.parametrize("name", ALL_FAMILIES)
def test_attention_mask_leaves_right_padding_out(name):
    """A right-padded row's real positions give the logits of the row alone (sliding windows, soft-capping and
    routing included), and a full row of the same batch those of the unmasked batch."""
    model = M.AutoModelForCausalLM.from_pretrained(fixture(name), dtype="float64")
    ids = read_safetensors(os.path.join(fixture(name), "reference.safetensors"))["input_ids"]
    L = ids.shape[1] - 6

    def logits(x, **kw):
        return model(genesis.tensor(x.tolist(), dtype=genesis.int64), **kw).logits.detach().numpy()

    mask = np.ones_like(ids)
    mask[0, L:] = 0
    got = logits(ids, attention_mask=genesis.tensor(mask.tolist(), dtype=genesis.int64))
    alone, full = logits(ids[:1, :L]), logits(ids)
    assert np.abs(got[0, :L] - alone[0]).max() <= 1e-12 * np.abs(alone).max()
    assert np.abs(got[1] - full[1]).max() <= 1e-12 * np.abs(full).max()
    assert np.abs(got[0, L:] - full[0, L:]).max() > 1e-6 * np.abs(full).max()  # the padding itself is not attended
