"""What WHOS_ONLINE_ACCESS costs a page: the site block rendered with and without a policy.

    .venv/bin/python benchmarks/access.py [--redis redis://127.0.0.1:6379/13]

Each operation is one request's ``{% whos_online %}`` (a fresh request, so the
policy is asked, once, as on a real page) at steady state: the summary from the
per-process block cache, 100 members online. Without a policy; with
``names_to_members`` for a guest (the counts-only form) and for a member (the
names); and the question alone (``visits.access_of`` on a fresh request). The
difference is the policy's cost per request and namespace. Keys
live under ``whos_online_bench_access:<pid>:`` and are deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

ONLINE = 100
POLICY = "whos_online.access.names_to_members"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/13"))
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    prefix = f"whos_online_bench_access:{os.getpid()}"
    settings.configure(
        SECRET_KEY="bench-access",
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "whos_online"],
        TEMPLATES=[
            {"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}
        ],
        CACHES={"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": args.redis}},
        WHOS_ONLINE_KEY_PREFIX=prefix,
    )
    django.setup()
    from whos_online.conf import Settings

    Settings.block_cache = 3600.0  # every block shows the kept read
    from types import SimpleNamespace

    from django.contrib.auth.models import AnonymousUser, User
    from django.template import engines
    from django.test import RequestFactory
    from runner import Case, extra, run, table, us

    from whos_online import presence
    from whos_online.store.connection import get_client
    from whos_online.visitors.visits import access_of

    for pk in range(ONLINE):
        presence.record_user(SimpleNamespace(pk=pk, is_staff=False, username=f"m{pk}"))
    block = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
    factory = RequestFactory()

    def page(user: object) -> Callable[[int], None]:
        def render(n: int) -> None:
            for _ in range(n):
                request = factory.get("/")
                request.user = user
                block.render({}, request)

        return render

    def ask(user: object) -> Callable[[int], None]:
        def asked(n: int) -> None:
            for _ in range(n):
                request = factory.get("/")
                request.user = user
                access_of(request, None)

        return asked

    member = User(pk=10_000, username="reader")
    guest = AnonymousUser()
    cases = [
        Case("guest, no policy", page(guest)),
        Case("guest, counts only (names_to_members)", page(guest), {"WHOS_ONLINE_ACCESS": POLICY}),
        Case("member, no policy", page(member)),
        Case("member, names (names_to_members)", page(member), {"WHOS_ONLINE_ACCESS": POLICY}),
        Case("the question alone, no policy", ask(member)),
        Case("the question alone, names_to_members", ask(member), {"WHOS_ONLINE_ACCESS": POLICY}),
    ]
    try:
        run(cases, rounds=args.rounds, slices=3, slice_ms=20, seed=1)
    finally:
        client = get_client()
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    rows = [
        [cases[0].name, us(cases[0]), ""],
        [cases[1].name, us(cases[1]), f"{extra(cases[1], cases[0]):.1f}"],
        [cases[2].name, us(cases[2]), ""],
        [cases[3].name, us(cases[3]), f"{extra(cases[3], cases[2]):.1f}"],
        [cases[4].name, us(cases[4]), ""],
        [cases[5].name, us(cases[5]), f"{extra(cases[5], cases[4]):.1f}"],
    ]
    header = [f"`{{% whos_online %}}`, one request, {ONLINE} online", "µs", "policy's cost, µs"]
    print("\n".join(table(header, rows)))


if __name__ == "__main__":
    main()
