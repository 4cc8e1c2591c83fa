"""The binding against the C header: structures, codes, versions."""

import ctypes
import os
import subprocess

import pytest

import dlock
from dlock import _lib, errors

from conftest import SOURCE_DIR

HEADER_DIR = SOURCE_DIR / "include"


def compile_and_run(tmp_path, source, *flags):
    c = tmp_path / "check.c"
    c.write_text(source)
    exe = tmp_path / "check"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", f"-I{HEADER_DIR}", "-o", str(exe),
                    str(c), *flags], check=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout


def test_structures_match_the_header(tmp_path):
    """Every size and field offset of the ctypes mirrors is the compiler's."""
    lines, expected = [], []
    for cname, cls in _lib.STRUCTS.items():
        lines.append(f'printf("%zu\\n", sizeof({cname}));')
        expected.append(ctypes.sizeof(cls))
        for field, _ in cls._fields_:
            lines.append(f'printf("%zu\\n", offsetof({cname}, {field}));')
            expected.append(getattr(cls, field).offset)
    constants = {
        "DLOCK_CLIENT_OPTIONS_VERSION": _lib.CLIENT_OPTIONS_VERSION,
        "DLOCK_ACQUIRE_OPTIONS_VERSION": _lib.ACQUIRE_OPTIONS_VERSION,
        "DLOCK_STATS_VERSION": _lib.STATS_VERSION,
        "DLOCK_NAME_MAX": _lib.NAME_MAX, "DLOCK_TTL_MIN_MS": _lib.TTL_MIN_MS,
        "DLOCK_TTL_MAX_MS": _lib.TTL_MAX_MS, "DLOCK_DURATION_MAX_MS": _lib.DURATION_MAX_MS,
        "DLOCK_TOKEN_LEN": _lib.TOKEN_LEN, "DLOCK_NODES_MAX": _lib.NODES_MAX,
        "DLOCK_PERMITS_MAX": _lib.PERMITS_MAX, "DLOCK_LEASE_MIN_MS": _lib.LEASE_MIN_MS,
        "DLOCK_LEASE_MAX_MS": _lib.LEASE_MAX_MS, "DLOCK_REPLICAS_MAX": _lib.REPLICAS_MAX,
        "DLOCK_AUDIT_MAXLEN_MAX": _lib.AUDIT_MAXLEN_MAX,
        "DLOCK_WAIT_FOREVER": _lib.WAIT_FOREVER,
    }
    for macro, value in constants.items():
        lines.append(f'printf("%lld\\n", (long long)({macro}));')
        expected.append(value)
    # The _INIT macros fill exactly the fields the structures have.
    lines.append("dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT; (void)co;")
    lines.append("dlock_acquire_options ao = DLOCK_ACQUIRE_OPTIONS_INIT; (void)ao;")
    source = ("#include <dlock.h>\n#include <stddef.h>\n#include <stdio.h>\n"
              "int main(void) {\n" + "\n".join(lines) + "\nreturn 0; }\n")
    out = compile_and_run(tmp_path, source, "-Wmissing-field-initializers")
    assert [int(x) for x in out.split()] == expected


def test_the_header_version_is_known(tmp_path):
    out = compile_and_run(tmp_path, '#include <dlock.h>\n#include <stdio.h>\n'
                          'int main(void) { printf("%d %d", DLOCK_VERSION_MAJOR, '
                          'DLOCK_VERSION_MINOR); return 0; }\n')
    assert tuple(int(x) for x in out.split()) in _lib.KNOWN_VERSIONS
    assert _lib.parse_version(dlock.library_version())[:2] in _lib.KNOWN_VERSIONS


def test_every_code_has_its_exception():
    lib = _lib.get()
    code = -1
    while lib.dlock_err_name(code) != b"DLOCK_UNKNOWN":
        name = lib.dlock_err_name(code).decode()
        assert name in errors.CLASSES, f"{name} has no exception class"
        e = errors.make(code, "detail")
        assert isinstance(e, dlock.Error) and e.code == code and e.name == name
        assert str(e) == f"{lib.dlock_strerror(code).decode()}: detail"
        code -= 1
    assert len(errors.CLASSES) == -code - 1
    assert issubclass(dlock.InvalidArgument, ValueError)
    assert issubclass(dlock.Timeout, dlock.Unavailable)


def fake_library(tmp_path, version):
    so = tmp_path / "libfake.so"
    src = tmp_path / "fake.c"
    src.write_text(f'const char *dlock_version(void) {{ return "{version}"; }}\n')
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return str(so)


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0", "0.2.9", "garbage"])
def test_an_unknown_version_is_refused(tmp_path, version):
    with pytest.raises(dlock.LibraryError, match=f"is libdlock {version}; this binding knows 0.3.x"):
        _lib.open_library(fake_library(tmp_path, version))


def test_a_known_version_without_every_function_is_refused(tmp_path):
    with pytest.raises(dlock.LibraryError, match="has no dlock_strerror"):
        _lib.open_library(fake_library(tmp_path, "0.3.7"))


def test_a_missing_library_says_where_it_looked(tmp_path):
    with pytest.raises(dlock.LibraryError, match="cannot load .*nowhere.so"):
        _lib.open_library(str(tmp_path / "nowhere.so"))


def test_the_library_comes_from_the_environment():
    assert _lib.get()._name == os.environ["DLOCK_LIBRARY"]
    assert dlock.load() == dlock.library_version()
    with pytest.raises(dlock.LibraryError, match="already loaded"):
        dlock.load("/elsewhere/libdlock.so.1")
