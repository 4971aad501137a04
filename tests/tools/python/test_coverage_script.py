"""scripts/python_coverage.py: it runs, its counts are sane, known names are found and made-up ones are not, the
strict checks tell classes from functions, and --write/--check keep the docs' coverage block current.  The
counts themselves change as names are added, so the docs' freshness is not checked here."""
import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest

import genesis
from conftest import SOURCE_DIR, torch

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "python_coverage.py")


@pytest.fixture(scope="module")
def cov():
    spec = importlib.util.spec_from_file_location("python_coverage", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report(cov):
    return cov.collect(with_probes=False)


def rows_of(report, namespace):
    return {name: (kind, st) for name, kind, st in report["namespaces"][namespace]["rows"]}


def test_counts_are_sane(report):
    spaces = report["namespaces"]
    assert set(spaces) == {"torch", "torch.Tensor", "torch.nn", "torch.nn.Module", "torch.nn.functional",
                           "torch.nn.init", "torch.optim", "torch.optim.lr_scheduler", "torch.utils.data",
                           "torch.linalg", "torch.autograd"}
    for namespace, s in spaces.items():
        assert s["total"] == len(s["rows"]) > 0, namespace
        assert s["supported"] == sum(st == "yes" for _, _, st in s["rows"]), namespace
        assert 0 < s["supported"] <= s["total"] or namespace in ("torch.linalg", "torch.autograd"), namespace
    # PyTorch 1.13's public API is large; a filter gone wrong would shrink these a lot
    assert spaces["torch"]["total"] > 500
    assert spaces["torch.Tensor"]["total"] > 400
    assert spaces["torch.nn"]["total"] > 100
    assert spaces["torch.nn.functional"]["total"] > 80
    assert spaces["torch.optim"]["total"] == 14


def test_known_names_supported(report):
    assert rows_of(report, "torch.nn")["Linear"] == ("class", "yes")
    assert rows_of(report, "torch.nn.functional")["relu"][1] == "yes"
    assert rows_of(report, "torch.optim")["SGD"][1] == "yes"
    assert rows_of(report, "torch")["float32"] == ("dtype", "yes")
    assert rows_of(report, "torch")["matmul"] == ("function", "yes")
    assert rows_of(report, "torch.Tensor")["__add__"] == ("operator", "yes")
    assert rows_of(report, "torch.Tensor")["backward"] == ("method", "yes")
    assert rows_of(report, "torch.utils.data")["DataLoader"][1] == "yes"


def test_filters(report):
    torch_rows, tensor_rows = rows_of(report, "torch"), rows_of(report, "torch.Tensor")
    left_out = report["namespaces"]["torch"]["left_out"]
    assert "Graph" not in torch_rows and "Graph" in left_out          # TorchScript IR
    assert "cudnn_convolution" not in torch_rows and left_out["cudnn_convolution"].startswith("backend")
    assert "has_cuda" not in torch_rows and "_C" not in torch_rows and "nn" not in torch_rows
    assert "__div__" not in tensor_rows and "__torch_function__" not in tensor_rows
    assert "Optional" not in rows_of(report, "torch.nn.functional")
    assert "Tensor" not in rows_of(report, "torch.linalg")
    assert "normal" not in rows_of(report, "torch.nn.init") and "normal_" in rows_of(report, "torch.nn.init")
    assert "Counter" not in rows_of(report, "torch.optim.lr_scheduler")
    assert "factory_kwargs" not in rows_of(report, "torch.nn")


def test_made_up_names_not_supported(cov):
    assert cov.status([genesis.nn], "NoSuchLayerAnywhere", torch.nn.Linear) == "no"
    assert cov.status([genesis], "no_such_function_anywhere", torch.matmul) == "no"
    assert cov.status([None, genesis.nn], "Linear", torch.nn.Linear) == "yes"
    # a callable in torch needs a callable in genesis
    assert cov.status([types.SimpleNamespace(matmul=3)], "matmul", torch.matmul) == "no (not callable)"

    class Plain:
        pass

    class WithOp:
        def __floordiv__(self, other):
            return self

    # the __eq__ every object inherits is not an operator of genesis's own
    assert cov.status([Plain], "__eq__", torch.Tensor.__eq__) == "no"
    assert cov.status([WithOp], "__floordiv__", torch.Tensor.__floordiv__) == "yes"
    assert cov.status([Plain], "__floordiv__", torch.Tensor.__floordiv__) == "no"


def test_strict_checks(cov):
    assert cov.strict_status([genesis.nn], "Linear", torch.nn.Linear) == "yes"
    fake = types.SimpleNamespace(Linear=lambda *a: None, Adam=type("Adam", (), {}), Conv=type("Conv", (), {}))
    assert cov.status([fake], "Linear", torch.nn.Linear) == "yes"
    assert cov.strict_status([fake], "Linear", torch.nn.Linear) == "no (not a class)"
    assert cov.strict_status([fake], "Conv", torch.nn.Conv1d) == "no (not an nn.Module subclass)"
    assert cov.strict_status([fake], "Adam", torch.optim.Adam) == "no (not an optim.Optimizer subclass)"
    assert cov.strict_status([genesis.optim], "Adam", torch.optim.Adam) == "yes"


def test_everyday_list(report):
    everyday = {name: (where, st) for name, where, st in report["everyday"]}
    assert everyday["torch.nn.MultiheadAttention"] == ("genesis.nn.MultiheadAttention", "yes")
    assert everyday["torch.nn.LSTM"][0] == "genesis.nn.LSTM"
    assert everyday["torch.linalg.solve"][0] == "genesis.linalg.solve"
    assert "torch.Tensor.exp_" in everyday and "torch.Tensor.__floordiv__" in everyday
    assert "torch.einsum" in everyday and "torch.Tensor.einsum" not in everyday  # only where PyTorch has it
    for name, (where, st) in everyday.items():
        assert st == "yes" or st.startswith("no"), (name, st)


def run_script(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=240, env=env)


def test_cli_json_and_probes():
    r = run_script("--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["torch_version"] == torch.__version__
    probes = data["probes"]
    assert len(probes) >= 5
    for what, result in probes:
        assert result == "yes" or result.startswith("no ("), (what, result)


def test_write_and_check(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "python.md").write_text("# Title\n\nbefore\n\n<!-- coverage:begin -->\nold\n"
                                    "<!-- coverage:end -->\n\nafter\n")
    assert run_script("--no-probes", "--check", "--root", str(tmp_path)).returncode == 1
    r = run_script("--no-probes", "--write", "--root", str(tmp_path))
    assert r.returncode == 0, r.stderr
    text = (docs / "python.md").read_text()
    assert text.startswith("# Title\n\nbefore\n\n<!-- coverage:begin -->\n") and text.endswith("after\n")
    assert "old" not in text and "| `torch.nn` | `genesis.nn` |" in text
    assert "| `Linear` | class | yes |" in (docs / "python-coverage.md").read_text()
    assert run_script("--no-probes", "--check", "--root", str(tmp_path)).returncode == 0
    (docs / "python-coverage.md").write_text("edited\n")
    r = run_script("--no-probes", "--check", "--root", str(tmp_path))
    assert r.returncode == 1 and "python-coverage.md" in r.stderr
    (docs / "python.md").write_text("no markers\n")
    r = run_script("--no-probes", "--write", "--root", str(tmp_path))
    assert r.returncode != 0 and "coverage:begin" in r.stderr
