"""Open WebSockets through Redis faults, on the real clock: how long until it is right again.

    cd benchmarks && python socket_faults.py     # needs redis-server on PATH

One process (this one) holds MEMBERS member sockets and one anonymous
subscriber, real consumers through Channels' WebsocketCommunicator, against a
redis-server of its own on a spare port (tests/redis_server.py) with the
shipped defaults (WHOS_ONLINE_HEARTBEAT 25 s, the hub's sweep and reads every 10 s,
WHOS_ONLINE_BACKOFF 5 s) but a MAX_AGE window. Nobody else visits. Writes
SOCKET_FAULTS.md.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django  # noqa: E402

django.setup()

from asgiref.sync import async_to_sync  # noqa: E402
from channels.routing import URLRouter  # noqa: E402
from channels.testing import WebsocketCommunicator  # noqa: E402
from django.contrib.auth.models import AnonymousUser  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from live_push import Member  # noqa: E402
from runner import table  # noqa: E402

from tests.conftest import STAFF  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from whos_online import presence, push  # noqa: E402
from whos_online.conf import conf  # noqa: E402
from whos_online.contrib.channels import hub  # noqa: E402
from whos_online.contrib.channels.routing import websocket_urlpatterns  # noqa: E402

MEMBERS = 20
FAULT = float(os.environ.get("FAULT", 15))  # s a killed or frozen Redis stays down
MAX_AGE = 60  # s, the window: its cookie's life (half of it) is the wait before the closes
RESULTS = Path(__file__).resolve().parent / "SOCKET_FAULTS.md"
application = URLRouter(websocket_urlpatterns)


def answer(read: Callable[[], Any]) -> Any:
    """``read()``, or None while Redis fails."""
    try:
        return read()
    except Exception:
        return None


async def seconds_until(condition: Callable[[], bool], limit: float = 120.0) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < limit, "not within the limit"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


def agrees(pks: list[str]) -> str:
    """Whether ``connected()`` lists exactly ``pks``, each of them online."""
    statuses = presence.statuses(pks, viewer=STAFF)
    right = sorted(push.connected()) == sorted(pks) and set(statuses.values()) == {"online"}
    return "yes" if right else "**no**"


async def socket(user: Any) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, "/ws/whos-online/")
    communicator.scope["user"] = user
    assert (await communicator.connect(timeout=10))[0]
    return communicator


def pushed(page: WebsocketCommunicator, kind: str) -> Callable[[], bool]:
    """Whether ``page`` has been sent a message of ``kind`` (messages before it are dropped)."""

    def seen() -> bool:
        while not page.output_queue.empty():
            message = page.output_queue.get_nowait()
            if kind in message.get("text", ""):
                return True
        return False

    return seen


async def scenario(server: RedisServer) -> list[list[Any]]:
    page = await socket(AnonymousUser())
    tabs = [await socket(Member(pk)) for pk in range(1, MEMBERS + 1)]
    await seconds_until(lambda: answer(lambda: presence.summary(limit=0).user_count) == MEMBERS)
    rows = []

    server.restart()  # empty
    took = await seconds_until(
        lambda: answer(lambda: presence.summary(limit=0).user_count) == MEMBERS
    )
    rows.append(
        [
            "restarted empty, nobody visiting",
            f"{MEMBERS} counted and listed again after {took:.1f} s",
            agrees([str(pk) for pk in range(1, MEMBERS + 1)]),
        ]
    )

    # Their sockets close after a heartbeat that came past their cookie's life: not a page's
    # navigation, and nothing but the beats' timeout ends a close Redis skipped.
    await asyncio.sleep(conf.cookie_age + hub.heartbeat())
    server.pause()
    for closed in tabs[: MEMBERS // 2]:
        await closed.disconnect()
    await asyncio.sleep(FAULT)
    server.resume()
    half = [str(pk) for pk in range(1, MEMBERS // 2 + 1)]
    took = await seconds_until(
        lambda: all(
            s != "online"
            for s in (answer(lambda: presence.statuses(half)) or {"": "online"}).values()
        )
    )
    still = [str(pk) for pk in range(MEMBERS // 2 + 1, MEMBERS + 1)]
    rows.append(
        [
            f"frozen {FAULT:g} s, {MEMBERS // 2} sockets closed meanwhile",
            f"none of them online {took:.1f} s after SIGCONT",
            agrees(still),
        ]
    )

    pushed(page, "(drops what was sent before)")()
    server.kill()
    told = await seconds_until(pushed(page, "presence_unavailable"))
    await asyncio.sleep(max(FAULT - told, 0))
    server.start()  # empty
    took = await seconds_until(
        lambda: answer(lambda: presence.summary(limit=0).user_count) == MEMBERS - MEMBERS // 2
    )
    state = await seconds_until(pushed(page, "presence_state"))
    rows.append(
        [
            f"killed, restarted empty after {FAULT:g} s",
            f'page pushed "unavailable" {told:.1f} s after the kill; '
            f"{MEMBERS - MEMBERS // 2} counted again {took:.1f} s after the restart, "
            f"the page's whole state {took + state:.1f} s after it",
            agrees(still),
        ]
    )
    for open_tab in tabs[MEMBERS // 2 :]:
        await open_tab.disconnect()
    await page.disconnect()
    return rows


def main() -> None:
    with (
        tempfile.TemporaryDirectory() as directory,
        RedisServer(directory=Path(directory)) as server,
    ):
        cache = {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": server.url}
        prefix = f"whos_online_socket_faults:{uuid.uuid4().hex}"
        window = {"WHOS_ONLINE_MAX_AGE": MAX_AGE}
        with override_settings(CACHES={"default": cache}, WHOS_ONLINE_KEY_PREFIX=prefix, **window):
            rows = async_to_sync(scenario)(server)
    header = ["Fault", "What happened", "connected() and statuses agree"]
    text = f"""# Open WebSockets through Redis faults

`benchmarks/socket_faults.py`: one process, {MEMBERS} member sockets and one
subscriber (real consumers), a redis-server of its own, the shipped defaults but
a {MAX_AGE} s window, nobody else visiting; the real clock.

""" + "\n".join(table(header, rows, "---"))
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
