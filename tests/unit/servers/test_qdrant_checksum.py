"""The qdrant binary is trusted only by its sha256: anything else is deleted and refused."""

import hashlib

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import qdrant
from pglimits_core.servers.qdrant import QdrantServer, verify_binary


def test_wrong_checksum_is_refused_and_deleted(tmp_path):
    fake = tmp_path / "qdrant"
    fake.write_bytes(b"#!/bin/sh\necho not qdrant\n")
    with pytest.raises(PGLimitsError, match="expected " + qdrant.QDRANT_SHA256):
        verify_binary(fake)
    assert not fake.exists()


def test_matching_checksum_is_accepted(tmp_path):
    payload = b"some bytes"
    good = tmp_path / "qdrant"
    good.write_bytes(payload)
    expected = hashlib.sha256(payload).hexdigest()
    assert verify_binary(good, expected) == expected
    assert good.exists()


def test_missing_binary_names_the_install_command(tmp_path):
    with pytest.raises(PGLimitsError, match="servers install qdrant"):
        verify_binary(tmp_path / "absent")


@pytest.fixture
def state_dir_with_fake_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(tmp_path / "state"))
    binary = qdrant.binary_path()
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"tampered")
    binary.chmod(0o755)
    return binary


def test_start_refuses_tampered_cached_binary(state_dir_with_fake_binary, tmp_path):
    server = QdrantServer(data_dir=tmp_path / "data")
    with pytest.raises(PGLimitsError, match="sha256"):
        server.start()
    assert not state_dir_with_fake_binary.exists()
    assert server.endpoint is None


def test_install_refuses_tampered_cached_binary(state_dir_with_fake_binary):
    with pytest.raises(PGLimitsError, match="sha256"):
        QdrantServer.install()
    assert not state_dir_with_fake_binary.exists()
    assert ("qdrant 1.16.3 binary", qdrant.INSTALL_COMMAND) in QdrantServer.missing()
