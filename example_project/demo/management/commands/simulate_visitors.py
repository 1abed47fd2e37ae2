"""``manage.py simulate_visitors``: fill the who's-online sets with fake visitors."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from redis.exceptions import RedisError

from demo.simulation import simulate


class Command(BaseCommand):
    help = (
        "Record fake members and guests as online. With the embedded fakeredis this only "
        "reaches a server running in the same process; use `manage.py demo` or the home "
        "page's button there."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--members", type=int, default=12, metavar="N", help="members to record (default 12)"
        )
        parser.add_argument(
            "--guests", type=int, default=40, metavar="M", help="guests to record (default 40)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        members: int = options["members"]
        guests: int = options["guests"]
        if members < 0 or guests < 0:
            raise CommandError("--members and --guests must not be negative.")
        try:
            visitors = simulate(members, guests)
        except RedisError as exc:
            raise CommandError(f"Redis is unreachable, nobody simulated: {exc}") from exc
        verbosity: int = options["verbosity"]
        if verbosity >= 1:
            self.stdout.write(
                f"Recorded {len(visitors.usernames)} member(s) and "
                f"{len(visitors.guest_ips)} guest(s) as online."
            )
        if verbosity >= 2:
            self.stdout.write("Members: " + ", ".join(visitors.usernames))
            self.stdout.write("Guests:  " + ", ".join(visitors.guest_ips))
