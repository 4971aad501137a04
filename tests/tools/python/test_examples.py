"""The Python examples run (short, CI-sized), and the MLP reaches the same accuracy as the C++
example for the same arguments: same initialisation, dropout draws, batches and optimizer
(tests examples/python/)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import BUILD_DIR, SOURCE_DIR

EXAMPLES = os.path.join(SOURCE_DIR, "examples", "python")


def run_example(name, *args, timeout=240):
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def accuracy(out):
    m = re.findall(r"test acc ([0-9.]+)% \((\d+)/(\d+)\)", out)
    assert m, out
    return float(m[-1][0]), int(m[-1][1])


def fashion_mnist_available():
    import genesis
    return genesis.data.fashion_mnist_available()


@pytest.mark.skipif(not fashion_mnist_available(), reason="dataset-fashion-mnist is not installed")
def test_mlp_reaches_the_cpp_examples_accuracy():
    args = ["--epochs", "1", "--limit-train", "12000", "--limit-test", "2000", "--threads", "1"]
    py_out = run_example("train_fashion_mnist.py", "--model", "mlp", *args)
    cpp = os.path.join(BUILD_DIR, "bin", "train_fashion_mnist")
    if not os.path.exists(cpp):
        pytest.skip("the C++ example is not built")
    r = subprocess.run([cpp, "--model", "mlp", "--checkpoint", "none", "--progress", "lines", *args],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    train_loss = r"train loss (\S+)"
    py_loss, cpp_loss = re.findall(train_loss, py_out), re.findall(train_loss, r.stdout)
    py_acc, py_correct = accuracy(py_out)
    cpp_acc, cpp_correct = accuracy(r.stdout)
    print(f"MLP, 1 epoch on 12000 images: train loss Python {py_loss} C++ {cpp_loss}; "
          f"test accuracy Python {py_acc:.2f}%, C++ {cpp_acc:.2f}%")
    # The same computation step for step: the epoch's mean training loss agrees to all 9 printed digits.
    assert py_loss == cpp_loss
    # The C++ program evaluates with its dropout layer still in training mode (MLP registers only fc1-3,
    # so eval() does not reach it); the Python model evaluates without dropout, as torch does.
    assert py_acc >= cpp_acc - 0.5 and py_acc > 75.0


@pytest.mark.skipif(not fashion_mnist_available(), reason="dataset-fashion-mnist is not installed")
def test_cnn_trains():
    out = run_example("train_fashion_mnist.py", "--model", "cnn", "--epochs", "1", "--limit-train", "3000",
                      "--limit-test", "1000", "--threads", "1")
    assert accuracy(out)[0] > 55.0


def test_transformer_learns_to_reverse():
    out = run_example("transformer.py", "--steps", "80", "--length", "6")
    losses = [float(x) for x in re.findall(r"loss ([0-9.]+)", out)]
    assert losses[-1] < 0.7 * losses[0], out


@pytest.mark.parametrize("name", ["quickstart.py", "rng.py", "amp.py", "memory_profiling.py"])
def test_snippet_runs(name):
    run_example(name)


def test_sft_chat_trains_a_tokenizer_and_a_model(tmp_path):
    out = run_example("sft_chat.py", "--max-steps", "6", "--train", "400", "--questions", "2", "--batch-size", "16",
                      "--out", str(tmp_path))
    m = re.search(r"loss ([0-9.]+) -> ([0-9.]+)", out)
    assert m and float(m.group(2)) < float(m.group(1)), out
    assert "exact match on 2 held-out questions" in out
