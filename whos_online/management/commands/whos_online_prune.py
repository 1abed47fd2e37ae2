from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from redis.exceptions import RedisError

from whos_online import presence


class Command(BaseCommand):
    help = "Remove members older than WHOS_ONLINE_MAX_AGE from the who's-online sets."

    def handle(self, *args: Any, **options: Any) -> None:
        # No fail-open here: when Redis is unreachable, cron must notice.
        try:
            users, guests = presence.prune()
        except RedisError as exc:
            raise CommandError(f"Redis is unreachable, nothing pruned: {exc}") from exc
        if options["verbosity"] >= 1:
            self.stdout.write(f"Pruned {users} stale member(s) and {guests} stale guest(s).")
