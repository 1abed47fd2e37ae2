"""One address opening 100,000 rooms: the keys left, their memory, and what prune costs.

    .venv/bin/python benchmarks/rooms.py [--rooms 100000] [--redis redis://127.0.0.1:6379/13]

Records the rooms through ``presence.record_guest`` (the decorator's own call,
pipelined 1,000 at a time so the run takes seconds), once under the default
rooms cap (``conf.max_rooms``) and once with the cap above the number of rooms
(every room live, as before the cap existed). Then ``whos_online_prune`` runs
and every Redis call it makes is timed from the client: the longest is an upper
bound on how long Redis served nobody else (on a loaded machine it includes
the time Redis waited for a CPU: read its SLOWLOG too). Everything is under
``whos_online_bench_rooms:<pid>:`` and deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django  # noqa: E402
from django.conf import settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=100_000)
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"))
    args = parser.parse_args()
    prefix = f"whos_online_bench_rooms:{os.getpid()}"
    settings.configure(
        SECRET_KEY="bench-rooms",
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "whos_online"],
        CACHES={
            "default": {
                "BACKEND": "django_redis.cache.RedisCache",
                "LOCATION": args.redis,
                "OPTIONS": {"SOCKET_TIMEOUT": 10},
            }
        },
        WHOS_ONLINE_KEY_PREFIX=prefix,
    )
    django.setup()
    from unittest import mock

    from django.core.management import call_command

    from whos_online import presence
    from whos_online.conf import Settings
    from whos_online.store.connection import get_client

    client = get_client()
    print(f"| {args.rooms:,} rooms, one address | keys | memory | prune | calls | longest call |")
    print("|---|---|---|---|---|---|")
    try:
        for label, cap in (("default cap (10,000)", None), ("no cap (all live)", args.rooms * 2)):
            with mock.patch.object(Settings, "max_rooms", cap or Settings.max_rooms):
                fill(presence, client, args.rooms)
                keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
                pipe = client.pipeline(transaction=False)
                for key in keys:
                    pipe.memory_usage(key)
                memory = sum(int(size or 0) for size in pipe.execute())
                calls = timed_calls(client)
                started = time.perf_counter()
                call_command("whos_online_prune", stdout=StringIO())
                elapsed = time.perf_counter() - started
                longest = max(calls.durations)
                calls.stop()
            print(
                f"| {label} | {len(keys):,} | {memory / 1e6:.1f} MB | {elapsed * 1000:,.0f} ms "
                f"| {len(calls.durations):,} | {longest * 1000:.2f} ms |"
            )
            clean(client, prefix)
    finally:
        clean(client, prefix)


class Queued:
    """A pipeline as the record script's caller sees a client: the call queued, its answer
    a stand-in (no score before, not refused, no room left, none dropped)."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe

    def evalsha(self, *args: Any) -> list[Any]:
        self.pipe.evalsha(*args)
        return [None, 0, None, []]


def fill(presence: Any, client: Any, rooms: int) -> None:
    from whos_online.conf import conf
    from whos_online.store import recording, scripts

    client.script_load(scripts.RECORD.text)  # so the pipelined EVALSHAs find it
    pipe = client.pipeline(transaction=False)

    def execute() -> None:
        """Run the queued records, then drop the rooms they pushed over the cap, as
        each record's caller does (here one call per batch)."""
        dropped = [room.decode() for reply in pipe.execute() for room in reply[3]]
        if dropped:
            keys = {room: conf.namespace_keys(room) for room in dropped}
            scripts.drop_rooms(client, rooms_key=conf.rooms_key, rooms=keys)

    original = recording.get_client
    recording.get_client = lambda: Queued(pipe)
    try:
        for room in range(rooms):
            presence.record_guest("203.0.113.5", room=f"thread:{room}")
            if room % 1000 == 999:
                execute()
        execute()
    finally:
        recording.get_client = original


class timed_calls:
    """Times every execute_command of the client (each is one round trip)."""

    def __init__(self, client: Any) -> None:
        self.client, self.durations = client, []
        self.original = client.execute_command

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.durations.append(time.perf_counter() - started)

        client.execute_command = timed

    def stop(self) -> None:
        self.client.execute_command = self.original


def clean(client: Any, prefix: str) -> None:
    # UNLINK a hundred at a time: the Redis is shared, and a DEL of a thousand keys holds it.
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    for start in range(0, len(keys), 100):
        client.unlink(*keys[start : start + 100])


if __name__ == "__main__":
    main()
