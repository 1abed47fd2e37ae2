"""Redis's own time per record of a new guest, by checkout: what callgrind does not see.

    REDIS_URL=redis://127.0.0.1:6391/0 .venv/bin/python benchmarks/record_in_redis.py . ../c56ff5b

instructions.py counts the web process only; a record's script also costs Redis, which
runs one script at a time for every process of the site. For each checkout given, in
turn (``--rounds`` times), a process records ``--guests`` guests never seen before
through that checkout's ``presence.record_guest`` and reads Redis's ``INFO
commandstats`` before and after: microseconds per ``EVALSHA``, and how many of them
went to the commands the script ran (the rest is Lua). Use a Redis of your own: the
deltas count every client's commands. Each process deletes its keys.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(checkout: str, guests: int) -> None:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, checkout)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench_settings"
    import django

    django.setup()
    import redis
    from bench_settings import PREFIX, REDIS_URL
    from django.test.utils import override_settings

    from whos_online import presence

    admin = redis.Redis.from_url(REDIS_URL)
    try:
        with override_settings(WHOS_ONLINE_KEY_PREFIX=PREFIX):
            for i in range(200):  # the script cached, the keys made
                presence.record_guest(f"10.200.{i >> 8}.{i & 255}")
            before = admin.info("commandstats")
            for i in range(guests):
                presence.record_guest(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}")
            after = admin.info("commandstats")
    finally:
        for key in admin.scan_iter(f"{PREFIX}:*"):
            admin.delete(key)
    spent = {
        name: (
            after[name]["calls"] - before.get(name, {}).get("calls", 0),
            after[name]["usec"] - before.get(name, {}).get("usec", 0),
        )
        for name in after
    }
    calls, total = spent.pop("cmdstat_evalsha")
    spent.pop("cmdstat_info", None)
    commands = sum(usec for _, usec in spent.values())
    ran = sum(n for n, _ in spent.values()) / calls
    print(f"{total / calls:.1f} µs a record, {commands / calls:.1f} in its {ran:.0f} commands")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("checkouts", nargs="+", type=Path)
    parser.add_argument("--guests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for checkout in args.checkouts:
            command = [
                sys.executable,
                __file__,
                "--child",
                str(checkout.resolve()),
                str(args.guests),
            ]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            print(f"{checkout}: {out.strip()}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
