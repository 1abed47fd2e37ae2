"""``manage.py demo``: everything the demo needs, then the development server, in one process.

One process matters: without REDIS_URL the Redis is fakeredis, held in this
process's memory, so the visitors seeded here are only visible to a server
started from here (and runserver's auto-reloader, a child process, is off).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from redis.exceptions import RedisError

from demo.people import ACCOUNTS, PASSWORD, STAFF_LOGIN, get_or_create, login_for
from whos_online import presence

DEFAULT_ADDRPORT = "127.0.0.1:8000"
CRON_EVERY = 30  # seconds


class Command(BaseCommand):
    help = (
        "Migrate, create the demo users (alice, bob, carol, and staff user admin; "
        "password 'demo'; alice@example.com etc. with --settings demo.settings_email), "
        "simulate visitors, then run the development server."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "addrport",
            nargs="?",
            default=DEFAULT_ADDRPORT,
            help=f"Address and port to serve on, as for runserver (default {DEFAULT_ADDRPORT}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        addrport: str = options["addrport"]
        call_command("migrate", verbosity=0, interactive=False)
        created = self.create_users()
        call_command("simulate_visitors", verbosity=options["verbosity"])

        redis = "the one at REDIS_URL" if settings.REDIS_URL else "embedded fakeredis (in memory)"
        self.stdout.write("")
        alice = login_for("alice")
        self.stdout.write(
            self.style.SUCCESS(f"Open {url_for(addrport)} — log in as {alice} / {PASSWORD}")
        )
        members = [login_for(p.login) for p in ACCOUNTS if p.login != STAFF_LOGIN]
        self.stdout.write(
            f"Demo users: {', '.join(members)}, staff {login_for(STAFF_LOGIN)} "
            f"(password {PASSWORD!r})" + (f"; created {', '.join(created)}." if created else ".")
        )
        self.stdout.write(f"Redis: {redis}. Stop with CONTROL-C.")
        self.stdout.write("")
        threading.Thread(target=stand_in_for_cron, daemon=True).start()
        call_command("runserver", addrport, use_reloader=False)

    def create_users(self) -> list[str]:
        """Create whichever demo users are missing; return their logins."""
        created = []
        for person in ACCOUNTS:
            user, new = get_or_create(person, password=PASSWORD)
            if new:
                created.append(user.get_username())
        return created


def url_for(addrport: str) -> str:
    """The URL to open for a runserver address: "8000", "0.0.0.0:8000" or "[::1]:8000"."""
    if addrport.isdigit():
        return f"http://127.0.0.1:{addrport}/"
    host, _, port = addrport.rpartition(":")
    if host in ("0.0.0.0", "[::]", "0"):
        host = "127.0.0.1"
    return f"http://{host}:{port}/"


def stand_in_for_cron() -> None:
    """What the tutorial's cron line does on a real site: prune, and sample the admin's
    chart. Every half-minute, not every minute: a newcomer opens the admin page soon after
    the start, and its chart draws a line from the second sample; a day of samples at
    this pace still fits the chart's history."""
    while True:
        try:
            presence.prune()
        except RedisError:
            pass  # the pages say Redis is down; try again at the next turn
        time.sleep(CRON_EVERY)
