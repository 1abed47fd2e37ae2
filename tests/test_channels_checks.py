"""The Channels part's checks, which its app registers (whos_online.contrib.channels.checks)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_checks import ids, messages


@pytest.mark.parametrize("value", [8001, b"/ws/whos-online/"])
def test_a_websocket_url_of_the_wrong_type(settings: Any, value: Any) -> None:
    settings.WHOS_ONLINE_WEBSOCKET_URL = value
    [found] = messages()
    assert (found.id, found.msg) == (
        "whos_online.E005",
        f"WHOS_ONLINE_WEBSOCKET_URL is {value!r}; it must be str or None.",
    )
    assert found.hint == "Fix or remove it (the default is None)."
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    assert ids() == []


def test_websockets_without_whos_onlines_urls_is_an_error(settings: Any) -> None:
    """Live blocks need the endpoint (their fallback while the socket is down)."""
    settings.WHOS_ONLINE_WEBSOCKET_URL = "/ws/whos-online/"
    assert "whos_online.E016" not in ids()  # tests.urls includes them
    settings.ROOT_URLCONF = "tests.urls_without_whos_online"
    [message] = [m for m in messages() if m.id == "whos_online.E016"]
    assert message.hint == 'Add path("whos-online/", include("whos_online.urls")) to your URLconf.'
    settings.WHOS_ONLINE_WEBSOCKET_URL = None
    assert "whos_online.E016" not in ids()  # no live sockets: blocks without live= need none
