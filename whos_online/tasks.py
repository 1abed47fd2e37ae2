"""Pruning without cron: a Celery task and a Django task, each defined only if its framework is.

Both raise when Redis fails, so the scheduler records a failed run, as cron would mail one.
"""

from __future__ import annotations

from whos_online import presence


def prune_and_report(batch_size: int = 1000) -> dict[str, int]:
    """``presence.prune`` with a JSON-friendly result, for task result backends."""
    return presence.prune(batch_size=batch_size)._asdict()


try:
    from celery import shared_task
except ImportError:
    pass
else:
    celery_prune = shared_task(name="whos_online.prune", ignore_result=True)(prune_and_report)

try:
    from django.tasks import task  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    pass
else:
    django_prune = task()(prune_and_report)
