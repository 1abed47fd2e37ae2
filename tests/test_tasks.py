"""The ready-made prune tasks for sites that schedule with Celery beat or Django's tasks."""

from __future__ import annotations

from typing import Any

import django
import pytest
import redis
import time_machine
from celery import current_app

from tests import online_now
from tests.conftest import NOW, names
from whos_online import presence, tasks


def one_stale_member_and_guest(traveller: Any, people: Any) -> None:
    """Recorded, then 601 s later: one member and one guest past the window, one of each
    in it."""
    gone, here = people("gone", "here")
    presence.record_user(gone)
    presence.record_guest("203.0.113.1")
    traveller.shift(300)
    presence.record_user(here)
    presence.record_guest("203.0.113.2")
    traveller.shift(301)


def test_celery_task_prunes_and_is_registered_by_name(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        one_stale_member_and_guest(traveller, people)
        result = tasks.celery_prune.apply(kwargs={"batch_size": 10})
    assert result.successful()
    assert result.get() == {"users": 1, "guests": 1, "batches": 4}
    assert names(online_now.online_users(limit=None)) == ["here"]
    assert (
        tasks.celery_prune.name == "whos_online.prune" and "whos_online.prune" in current_app.tasks
    )


@pytest.mark.parametrize("stale, batches", [(999, 4), (1000, 5)])
def test_a_task_prunes_a_thousand_per_batch_by_default(
    redis_db: redis.Redis, settings: Any, stale: int, batches: int
) -> None:
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    with time_machine.travel(NOW, tick=False):
        redis_db.zadd(key, {f"guest{i}": NOW.timestamp() - 3600 for i in range(stale)})
        result = tasks.celery_prune.apply()
    assert result.get() == {"users": 0, "guests": stale, "batches": batches}


def test_the_celery_task_keeps_no_result() -> None:
    # Beat runs it every minute or so: nothing piles up in the result backend.
    assert tasks.celery_prune.ignore_result is True


def test_celery_task_fails_loudly_when_redis_is_down(dead_redis: None) -> None:
    result = tasks.celery_prune.apply()
    assert result.failed()
    assert isinstance(result.result, redis.exceptions.ConnectionError)


# Django's tasks framework exists from Django 6.0; the matrix runs this on 6.x.
if django.VERSION >= (6, 0):

    def test_django_task_prunes(redis_db: redis.Redis, settings: Any, people: Any) -> None:
        settings.WHOS_ONLINE_MAX_AGE = 600
        with time_machine.travel(NOW, tick=False) as traveller:
            one_stale_member_and_guest(traveller, people)
            result = tasks.django_prune.enqueue(batch_size=10)  # the default, immediate backend
        assert result.return_value == {"users": 1, "guests": 1, "batches": 4}
        assert names(online_now.online_users()) == ["here"]

else:

    def test_no_django_task_before_django_6() -> None:
        assert not hasattr(tasks, "django_prune")
