"""pip install, offline: the package builds with Debian's setuptools and
imports from where pip put it."""

import os
import shutil
import subprocess
import sys

from conftest import SOURCE_DIR, generous


def test_pip_installs_the_package_offline(tmp_path):
    src = tmp_path / "src"  # a copy: pip builds in the tree it is given
    shutil.copytree(SOURCE_DIR / "bindings" / "python", src,
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(src)],
                   check=True, env=env, timeout=generous(30))
    out = subprocess.run([sys.executable, "-c", "import dlock; print(dlock.__file__); "
                          "print(dlock.library_version())"],
                         cwd=tmp_path, env=dict(env, PYTHONPATH=str(target)), check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[0].startswith(str(target)) and out[1] == dlock_version()


def test_pip_installs_it_into_a_virtual_environment(tmp_path):
    """The README's way: a venv that sees the system's setuptools."""
    src = tmp_path / "src"
    shutil.copytree(SOURCE_DIR / "bindings" / "python", src,
                    ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=generous(30))
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-build-isolation",
                    str(src)], check=True, env=env, timeout=generous(30))
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import dlock; print(dlock.__file__)"], cwd=tmp_path, env=env,
                         check=True, capture_output=True, text=True).stdout
    assert out.startswith(str(venv))


def dlock_version():
    import dlock
    return dlock.library_version()
