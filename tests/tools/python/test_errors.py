"""Errors from the C API arrive as the Python exceptions torch raises for the same mistakes (RuntimeError for
shapes and dtypes, IndexError, TypeError, ValueError, MemoryError, OSError subclasses for files) with the gn_code as
`.code`, bad arguments never crash the interpreter, and Ctrl-C interrupts long calls (tests
tools/python/src/errors.cpp, genesis/_errors.py, models.cpp; test_errors_torch.py compares with torch case by case)."""
import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import genesis
import genesis.nn.functional as F


def test_codes_map_to_python_exceptions_with_torch_words():
    with pytest.raises(RuntimeError, match=r"^\[add\] The size of tensor a \(3\) must match the size of tensor b "
                                           r"\(4\) at non-singleton dimension 1$") as e:
        genesis.zeros(2, 3) + genesis.zeros(4)
    assert e.value.code == 2  # GN_ERR_SHAPE
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        genesis.zeros(2, 3) @ genesis.zeros(2, 3)
    with pytest.raises(IndexError, match=r"^\[index_select\] index out of range in self$") as e:
        genesis.zeros(3)[genesis.tensor([5])]
    assert e.value.code == 8  # GN_ERR_INDEX
    with pytest.raises(RuntimeError, match="on a bool tensor is not supported") as e:
        genesis.tensor([True]).neg()
    assert e.value.code == 3  # GN_ERR_DTYPE
    with pytest.raises(FileNotFoundError) as e:
        genesis.load("/nonexistent/nothing.safetensors")  # GN_ERR_NOT_FOUND
    assert e.value.errno == errno.ENOENT and e.value.filename == "/nonexistent/nothing.safetensors"
    assert str(e.value) == "[Errno 2] No such file or directory: '/nonexistent/nothing.safetensors'"
    with pytest.raises(RuntimeError, match="device type at start of device string: tpu"):
        genesis.zeros(2, device="tpu")
    with pytest.raises(MemoryError):
        genesis.empty(1 << 62, dtype=genesis.uint8)


def test_bad_arguments_raise_instead_of_crashing():
    x = genesis.ones(2, 3)
    for bad in (lambda: x.reshape(7), lambda: x.permute(0), lambda: x.sum(5), lambda: x[None, None, None, 0, 0, 0],
                lambda: F.linear(x, genesis.ones(4, 4)), lambda: F.cross_entropy(x, genesis.tensor([9, 9])),
                lambda: genesis.cat([]), lambda: x.view(genesis.float64), lambda: genesis.tensor([[1], [2, 3]]),
                lambda: genesis.tensor(object()), lambda: x + "a", lambda: x.to("nowhere"),
                lambda: genesis.from_dlpack(3), lambda: x.item(), lambda: genesis.randn(-1)):
        with pytest.raises((ValueError, TypeError, IndexError, RuntimeError)):
            bad()
    with pytest.raises(RuntimeError, match="in-place"):  # on a leaf that needs grad, as torch
        genesis.ones(2, requires_grad=True).add_(1)


def _tiny_qwen_script(body):
    return textwrap.dedent("""
        import genesis, genesis.models as M
        c = M.QwenConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=1 << 20,
                         dtype="float32", eos_token_ids=[])
        model = M.QwenForCausalLM(c)
    """) + textwrap.dedent(body)


def test_ctrl_c_interrupts_generation():
    script = _tiny_qwen_script("""
        import sys
        started = []

        def streamer(row, token):  # says once that the C++ loop runs
            if not started:
                started.append(1)
                print("ready", flush=True)
        try:
            model.generate([[1, 2, 3]], max_new_tokens=1_000_000, ignore_eos=True, streamer=streamer)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"  # inside generate
    time.sleep(0.5)
    t = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 3 and "interrupted" in out
    assert time.perf_counter() - t < 10


def test_exceptions_in_callbacks_propagate():
    script = _tiny_qwen_script("""
        def streamer(row, token):
            raise ValueError("stop here")
        try:
            model.generate([[1, 2]], max_new_tokens=5, streamer=streamer)
        except ValueError as e:
            print("caught", e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "caught stop here" in out.stdout, out.stderr


def test_errors_in_hooks_propagate_from_backward():
    x = genesis.ones(2, requires_grad=True)

    def hook(g):
        raise KeyError("from the hook")
    x.register_hook(hook)
    with pytest.raises(KeyError, match="from the hook"):
        (x * 2).sum().backward()


def test_no_crash_at_exit_with_live_tensors():
    script = "import genesis, numpy as np; a = genesis.ones(3); b = np.from_dlpack(a); c = genesis.from_dlpack(np.ones(2))"
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
