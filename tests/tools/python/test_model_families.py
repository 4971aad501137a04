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
