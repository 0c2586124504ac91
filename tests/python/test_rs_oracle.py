"""Keeps the Reed-Solomon oracle live: the committed fixture must equal what reedsolo makes now.

The generator is tests/oracle/rs_vectors.py; the Rust side (crates/link/tests/rs_oracle.rs)
checks our codec against the same file.
"""

import importlib.util
import pathlib

import pytest

reedsolo = pytest.importorskip("reedsolo")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "oracle" / "rs_vectors.py"
FIXTURE = ROOT / "crates" / "link" / "tests" / "fixtures" / "rs_reedsolo.txt"


def load_generator():
    spec = importlib.util.spec_from_file_location("rs_vectors", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_fixture_matches_reedsolo(tmp_path):
    gen = load_generator()
    out = tmp_path / "rs_reedsolo.txt"
    out.write_text(gen.render())
    assert out.read_text() == FIXTURE.read_text()


def test_fixture_codewords_decode_in_reedsolo():
    # Each fixture codeword, with t symbol errors, decodes back to itself in reedsolo too.
    for line in FIXTURE.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        nsym, n, hexcw = line.split()
        nsym, n = int(nsym), int(n)
        cw = bytes.fromhex(hexcw)
        assert len(cw) == n
        bad = bytearray(cw)
        t = nsym // 2
        for i in range(t):
            bad[(i * 37) % n] ^= 0x5A
        _, fixed, _ = reedsolo.RSCodec(nsym).decode(bad)
        assert bytes(fixed) == cw
