import socket

import pytest

from pglimits_core.cli import _parse_external
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.process import choose_port, free_port, port_is_free
from pglimits_core.servers.registry import SERVERS, server_class


def test_free_port_is_free_and_choose_port_honours_a_free_request():
    port = free_port()
    assert port_is_free(port)
    assert choose_port(port, "postgres") == port


def test_a_taken_port_is_a_one_line_error_naming_the_fix():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        with pytest.raises(PGLimitsError, match="already in use") as info:
            choose_port(taken, "redis")
    assert "\n" not in str(info.value) and "fix:" in str(info.value)


@pytest.mark.parametrize("port", [0, 70000])
def test_out_of_range_port(port):
    with pytest.raises(PGLimitsError, match="out of range"):
        choose_port(port, "redis")


def test_unknown_server_lists_the_known_ones():
    with pytest.raises(PGLimitsError, match="use one of: postgres"):
        server_class("mysql")


def test_every_registered_server_class_imports_and_has_its_name():
    for name in SERVERS:
        assert server_class(name).name == name


def test_external_endpoints_parse_and_reject_garbage():
    assert _parse_external(["redis=redis://h:1/0"]) == {"redis": "redis://h:1/0"}
    with pytest.raises(PGLimitsError, match="NAME=URL"):
        _parse_external(["redis"])
