"""Fixtures of the web-archive checks: the webdedup binary and pywb's sample archive."""

import io
import json
import os
import subprocess
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def webdedup():
    """Runs the binary named by WEBDEDUP_BIN (default target/debug/webdedup)."""
    binary = Path(os.environ.get("WEBDEDUP_BIN", REPO / "target" / "debug" / "webdedup"))
    if not binary.is_absolute():
        binary = REPO / binary
    if not binary.exists():
        pytest.fail(f"webdedup binary not found at {binary} (build it or set WEBDEDUP_BIN)")

    def run(*args, check=True):
        p = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"webdedup {' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}")
        return p

    return run


@pytest.fixture(scope="session")
def pywb_sample(tmp_path_factory):
    """pywb's sample_archive/, extracted from its sdist on PyPI (fails when PyPI is
    unreachable)."""
    base = os.environ.get("PYPI_JSON_URL", "https://pypi.org/pypi/pywb/json")
    try:
        meta = json.load(urllib.request.urlopen(base, timeout=60))
        sdist = next(u for u in meta["urls"] if u["packagetype"] == "sdist")
        data = urllib.request.urlopen(urllib.parse.urljoin(base, sdist["url"]), timeout=300).read()
    except Exception as e:  # network, proxy, no sdist
        pytest.fail(f"pywb sdist not reachable on PyPI (the test suite needs PyPI, like its pip installs): {e}")
    root = tmp_path_factory.mktemp("pywb")
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        members = [m for m in t.getmembers() if "/sample_archive/" in m.name and (m.isfile() or m.isdir())]
        t.extractall(root, members=members)
    found = list(root.glob("*/sample_archive"))
    assert found, "sample_archive/ missing from the pywb sdist"
    return found[0]
