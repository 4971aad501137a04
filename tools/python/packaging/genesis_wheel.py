"""tools/python/packaging/genesis_wheel.py - the PEP 517 build backend of `pip install .`.

It needs nothing from the network: CMake builds the package (the extension genesis._C, the core,
the frontend, the LLM library and the plugins) in a build directory, and the wheel is assembled here by hand:

    genesis/*.py, genesis/_C.cpython-*.so           the package
    genesis/lib/libgenesis.so.1                     the core (plugins are found next to it)
    genesis/lib/libgenesis_frontend.so.<maj>.<min>  the C++ frontend
    genesis/lib/libgenesis_llm.so.<maj>.<min>       the LLM library (models, tokenizer, SFT)
    genesis/lib/genesis/plugins/*.so                the device backends

genesis/__init__.py loads the three libraries from genesis/lib by path before importing _C, so the
installed package works wherever it lands.  The build directory is $GENESIS_BUILD_DIR when set,
else build/ when the README's commands already configured it (only the package's targets are
built then), else build-wheel/; $GENESIS_CMAKE_ARGS are added to a first configure.
"""
import base64
import glob
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import zipfile

NAME, VERSION = "genesis", "0.1.0"
SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _build_dir():
    if os.environ.get("GENESIS_BUILD_DIR"):
        return os.path.abspath(os.environ["GENESIS_BUILD_DIR"])
    default = os.path.join(SOURCE, "build")
    if os.path.exists(os.path.join(default, "build.ninja")):
        return default
    return os.path.join(SOURCE, "build-wheel")


def _run(cmd):
    print("genesis_wheel:", " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _cmake_build():
    build = _build_dir()
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _run(["cmake", "-S", SOURCE, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
              "-DGENESIS_BUILD_TESTS=OFF", "-DGENESIS_BUILD_EXAMPLES=OFF", "-DGENESIS_BUILD_BENCH=OFF",
              f"-DPython_EXECUTABLE={sys.executable}"] + shlex.split(os.environ.get("GENESIS_CMAKE_ARGS", "")))
    _run(["cmake", "--build", build, "--target", "genesis_python", "-j", str(os.cpu_count() or 2)])
    return build


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{plat}"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Genesis deep-learning framework (C++ core) for Python\n"
            "Requires-Python: >=3.8\n")


def _files(build):
    """(archive name, path on disk) of everything the wheel holds."""
    pkg = os.path.join(build, "python", "genesis")
    out = []
    for path in sorted(glob.glob(os.path.join(pkg, "**", "*"), recursive=True)):
        if os.path.isfile(path) and "__pycache__" not in path:
            out.append(("genesis/" + os.path.relpath(path, pkg), path))
    lib = os.path.join(build, "lib")
    for link in ("libgenesis.so", "libgenesis_frontend.so", "libgenesis_llm.so"):
        soname = os.readlink(os.path.join(lib, link))  # libgenesis.so -> libgenesis.so.1 (the soname link)
        out.append((f"genesis/lib/{soname}", os.path.realpath(os.path.join(lib, link))))
    for plugin in sorted(glob.glob(os.path.join(lib, "genesis", "plugins", "libgenesis_plugin_*.so"))):
        out.append(("genesis/lib/genesis/plugins/" + os.path.basename(plugin), plugin))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


# ---- PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(_metadata())
    return os.path.basename(info)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _cmake_build()
    tag = _tag()
    wheel_name = f"{NAME}-{VERSION}-{tag}.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for name, path in _files(build):
            with open(path, "rb") as f:
                data = f.read()
            info_z = zipfile.ZipInfo(name)
            info_z.external_attr = (0o755 if name.endswith(".so") or ".so." in name else 0o644) << 16
            info_z.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info_z, data)
            records.append(_record_line(name, data))
        extra = {
            f"{info}/METADATA": _metadata(),
            f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: genesis_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n",
            f"{info}/top_level.txt": "genesis\n",
        }
        for name, text in extra.items():
            z.writestr(name, text)
            records.append(_record_line(name, text.encode()))
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    import tarfile
    name = f"{NAME}-{VERSION}"
    tracked = subprocess.run(["git", "-C", SOURCE, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split()
    with tarfile.open(os.path.join(sdist_directory, name + ".tar.gz"), "w:gz") as t:
        for f in tracked:
            t.add(os.path.join(SOURCE, f), arcname=f"{name}/{f}")
        pkg_info = os.path.join(sdist_directory, "PKG-INFO")
        with open(pkg_info, "w") as f:
            f.write(_metadata())
        t.add(pkg_info, arcname=f"{name}/PKG-INFO")
        os.remove(pkg_info)
    return name + ".tar.gz"
