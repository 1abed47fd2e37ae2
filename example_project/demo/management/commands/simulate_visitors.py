"""``manage.py simulate_visitors``: fill the who's-online sets with fake visitors."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from redis.exceptions import RedisError

from demo.simulation import simulate
from whos_online.conf import conf


class Command(BaseCommand):
    help = (
        "Record fake members (created as users if missing; migrate first) and guests as "
        "online. With the embedded fakeredis this only reaches a server running in the same "
        "process; use `manage.py demo` or the home page's button there."
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
        except DatabaseError as exc:
            raise CommandError(
                f"The simulated members are users; run `manage.py migrate` first ({exc})."
            ) from exc
        verbosity: int = options["verbosity"]
        if verbosity >= 1:
            self.stdout.write(
                f"Recorded {len(visitors.members)} member(s) and "
                f"{len(visitors.guest_ips)} guest(s) as online."
            )
        if verbosity >= 2:
            # Their display names: what the block shows (never an email address).
            names = [
                conf.member_card(user).get("name") or f"#{user.pk}" for user in visitors.members
            ]
            self.stdout.write("Members: " + ", ".join(names))
            self.stdout.write("Guests:  " + ", ".join(visitors.guest_ips))
