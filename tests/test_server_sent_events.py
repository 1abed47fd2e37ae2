"""docs/howto/server-sent-events.md's stream, built on ``whos_online.push`` alone: served
by ``runserver``, a join and a leave arrive in it; a member's open stream is a
connection of theirs until it closes."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import redis

from tests.conftest import django_redis_cache, require
from tests.load_site import uvicorn
from tests.load_site.sse import online_events
from tests.redis_server import RedisServer
from whos_online import presence, push

pytestmark = pytest.mark.django_db


@pytest.fixture
def stream(tmp_path: Path, settings: Any) -> Iterator[IO[bytes]]:
    """The how-to's stream, opened by a guest on ``runserver`` (started and stopped by its
    pid) against a redis-server of the test's own, which this process records into."""
    require("redis-server")
    prefix = f"whos_online_sse:{uuid.uuid4().hex}"
    with RedisServer(directory=tmp_path) as own_redis:
        settings.CACHES = {"default": django_redis_cache(own_redis.url)}
        settings.WHOS_ONLINE_KEY_PREFIX = prefix
        env = uvicorn.environment(
            own_redis.url, prefix, tmp_path, LOAD_SITE_URLCONF="tests.load_site.sse"
        )
        with (
            open(tmp_path / "runserver.log", "wb") as log,
            uvicorn.serving(env, log, uvicorn.runserver) as (port, _),
            urllib.request.urlopen(f"http://127.0.0.1:{port}/online/events/", timeout=10) as page,
        ):
            assert page.headers["Content-Type"] == "text/event-stream"
            yield page


def next_event(page: IO[bytes]) -> dict[str, Any]:
    """The next event's data (comments skipped); the page's timeout bounds the wait."""
    while not (line := page.readline()).startswith(b"data: "):
        assert line, "the stream ended"
    return dict(json.loads(line.removeprefix(b"data: ")))


def test_a_join_and_a_leave_arrive_in_the_stream(stream: IO[bytes], people: Any) -> None:
    (alice,) = people("alice")
    # (urllib's User-Agent is a crawler's to whos_online: no guest is counted.)
    assert next_event(stream) == {"joined": [], "left": [], "users": 0, "guests": 0}
    presence.record_user(alice)
    assert next_event(stream) == {"joined": ["alice"], "left": [], "users": 1, "guests": 0}
    presence.forget_user(alice)
    assert next_event(stream) == {"joined": [], "left": ["alice"], "users": 0, "guests": 0}


def test_a_members_open_stream_is_a_connection_of_theirs(
    redis_db: redis.Redis, people: Any, rf: Any
) -> None:
    (alice,) = people("alice")
    request = rf.get("/online/events/")
    request.user = alice
    response = online_events(request)
    events = iter(response.streaming_content)
    assert next(events).startswith(b'data: {"joined": ["alice"], "left": []')
    assert push.connected() == [str(alice.pk)]  # a beating connection keeps her online
    response.close()  # the page went away
    assert push.connected() == []


def test_notices_say_where_each_change_was(redis_db: redis.Redis, people: Any) -> None:
    """First the subscription (anything may have changed before it), then each change's
    namespace, and None after each ``wait`` without one."""
    (alice,) = people("alice")
    notices = push.notices(wait=0.2)
    assert next(notices) == push.Notice(None, everywhere=True)
    presence.record_user(alice, room="topic:1")
    assert next(notices) == push.Notice("topic:1")
    assert next(notices) is None
    presence.record_user(alice)
    assert next(notices) == push.Notice(None)  # the site
    notices.close()
