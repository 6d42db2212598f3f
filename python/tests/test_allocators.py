import io
import os
from pathlib import Path

from txalloc import allocators
from txalloc.spec import AllocatorDef


def test_missing_peer_without_root_prints_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    ghost = allocators.locate(AllocatorDef("ghost", "libghost-none.so.9", "libghost9"), tmp_path)
    assert not ghost.available and "libghost9" in ghost.missing_reason
    out = io.StringIO()
    assert allocators.install_missing([ghost], out) == ["libghost9"]
    text = out.getvalue()
    assert "sudo apt-get install -y -q libghost9" in text and "goes on" in text


def test_build_allocator_and_preload_environment(tmp_path: Path):
    d = AllocatorDef("txalloc", "@build/libtxalloc.so", None, env={"X": "1"})
    assert not allocators.locate(d, tmp_path).available
    (tmp_path / "libtxalloc.so").write_bytes(b"")
    found = allocators.locate(d, tmp_path)
    assert found.available and found.path == str(tmp_path / "libtxalloc.so")
    env = found.environment({"LD_PRELOAD": "/other.so", "PATH": "/bin"})
    assert env["LD_PRELOAD"] == f"{tmp_path / 'libtxalloc.so'}:/other.so"
    assert env["X"] == "1" and env["PATH"] == "/bin"
    glibc = allocators.locate(AllocatorDef("glibc", None, None), tmp_path)
    assert glibc.available and "LD_PRELOAD" not in glibc.environment({"PATH": "/bin"})


def test_library_list_preloads_each_in_order(tmp_path: Path):
    d = AllocatorDef("txalloc+RAND", "@build/librand-placement.so:@build/libtxalloc.so", None)
    (tmp_path / "libtxalloc.so").write_bytes(b"")
    missing = allocators.locate(d, tmp_path)
    assert not missing.available and "librand-placement.so not built" in missing.missing_reason
    (tmp_path / "librand-placement.so").write_bytes(b"")
    found = allocators.locate(d, tmp_path)
    assert found.available
    env = found.environment({})
    assert env["LD_PRELOAD"] == f"{tmp_path / 'librand-placement.so'}:{tmp_path / 'libtxalloc.so'}"
