from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from redis.exceptions import RedisClusterException, RedisError

from whos_online import presence
from whos_online.store import stats
from whos_online.store.connection import CacheAliasError


class Command(BaseCommand):
    help = (
        "Remove guests older than WHOS_ONLINE_MAX_AGE and members older than "
        "WHOS_ONLINE_RETENTION (by default the same) from the who's-online sets."
    )
    # Cron mails whatever a job prints: a site's unrelated check warnings would
    # arrive every run. Nothing on success, one line on failure.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size",
            type=int,
            default=1000,
            help="Members removed per Redis call; each call blocks Redis for about "
            "1 µs per member (default: 1000).",
        )
        parser.add_argument(
            "--reset-peak",
            action="store_true",
            help='Forget "most ever online" first (e.g. a count a flood pinned); this run '
            "starts it again from the number online now.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        # No fail-open here: when Redis fails, cron must notice.
        try:
            old_peak = stats.reset_peak() if options["reset_peak"] else None
            result = presence.prune(batch_size=options["batch_size"])
        except CacheAliasError as exc:  # a RedisError too, but cron's mail must say settings.py
            raise CommandError(f"A mistake in the settings, nothing pruned: {exc}") from exc
        except (RedisError, RedisClusterException) as exc:
            raise CommandError(f"Redis failed, pruning stopped: {exc}") from exc
        if options["verbosity"] >= 1:
            self.stdout.write(
                f"Pruned {result.users} stale member(s) and {result.guests} stale guest(s) "
                f"in {result.batches} batch(es)."
            )
            if options["reset_peak"]:
                was = (
                    f"{old_peak.count} on {old_peak.at:%Y-%m-%d %H:%M} UTC" if old_peak else "none"
                )
                self.stdout.write(f"Reset the peak (it was {was}).")
