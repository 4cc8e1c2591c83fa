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


def dlock_version():
    import dlock
    return dlock.library_version()
