"""`pip install .` into a fresh virtualenv without the network (pyproject.toml's in-tree backend,
tools/python/packaging/genesis_wheel.py), reusing the test build's targets: the installed
package imports, computes, and loads the core and its plugins from its own genesis/lib."""
import json
import os
import subprocess
import sys


from conftest import BUILD_DIR, SOURCE_DIR


def test_pip_install_into_a_virtualenv_finds_its_plugins(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip_env = dict(os.environ, GENESIS_BUILD_DIR=os.path.abspath(BUILD_DIR), PIP_NO_INDEX="1",
                   PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip_env.pop("PYTHONPATH", None)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", SOURCE_DIR], capture_output=True,
                       text=True, env=pip_env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    script = ("import genesis, json\n"
              "y = (genesis.ones(2, 3) * 2).sum()\n"
              "maps = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libgenesis' in l})\n"
              "print(json.dumps({'value': y.item(), 'maps': maps, 'package': genesis.__file__}))\n")
    run_env = dict(os.environ)
    run_env.pop("PYTHONPATH", None)
    r = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, env=run_env,
                       cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["value"] == 12.0 and out["package"].startswith(str(venv))
    lib = os.path.join(os.path.dirname(out["package"]), "lib")
    assert os.path.join(lib, "libgenesis.so.1") in out["maps"]
    assert any(m.startswith(os.path.join(lib, "genesis", "plugins", "libgenesis_plugin_")) for m in out["maps"])
    assert all(m.startswith(lib) for m in out["maps"]), out["maps"]  # nothing from the build tree
