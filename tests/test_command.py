"""``whos_online_prune`` through call_command, as cron runs it."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.core.management import CommandError, call_command

from tests.conftest import NOW
from whos_online import presence


def test_prunes_stale_members_and_reports_counts(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    old, fresh = people("old", "fresh")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(old)
        presence.record_guest("203.0.113.1")
        traveller.shift(500)
        presence.record_user(fresh)
        presence.record_guest("203.0.113.2")
        traveller.shift(200)
        out = StringIO()
        call_command("whos_online_prune", stdout=out)
    assert out.getvalue().strip() == "Pruned 1 stale member(s) and 1 stale guest(s) in 4 batch(es)."
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    assert redis_db.zrange(f"{prefix}:users", 0, -1) == [str(fresh.pk).encode()]
    # the stale member's card went with them
    assert redis_db.hkeys(f"{prefix}:cards") == [str(fresh.pk).encode()]


def test_members_stay_for_the_retention_guests_for_the_window(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    """What the help says: a member past the window but inside the retention stays."""
    settings.WHOS_ONLINE_MAX_AGE = 600
    settings.WHOS_ONLINE_RETENTION = 3600
    (away,) = people("away")
    with time_machine.travel(NOW, tick=False) as traveller:
        presence.record_user(away)
        presence.record_guest("203.0.113.1")
        traveller.shift(500)
        presence.record_guest("203.0.113.2")  # keeps the guests' key alive
        traveller.shift(200)
        out = StringIO()
        call_command("whos_online_prune", stdout=out)
    assert out.getvalue().strip().startswith("Pruned 0 stale member(s) and 1 stale guest(s)")
    assert redis_db.zrange(f"{settings.WHOS_ONLINE_KEY_PREFIX}:users", 0, -1) == [
        str(away.pk).encode()
    ]


def test_verbosity_zero_is_silent(redis_db: redis.Redis) -> None:
    out = StringIO()
    call_command("whos_online_prune", verbosity=0, stdout=out)
    assert out.getvalue() == ""


def test_unreachable_redis_is_a_command_error(dead_redis: None) -> None:
    with pytest.raises(CommandError, match="Redis failed, pruning stopped"):
        call_command("whos_online_prune")


def test_a_misnamed_cache_alias_is_called_a_settings_mistake_not_a_redis_failure(
    redis_db: redis.Redis, settings: Any
) -> None:
    settings.WHOS_ONLINE_CACHE_ALIAS = "presense"
    settings.WHOS_ONLINE_REDIS_CLIENT = None  # the alias, even where a suite names a client
    with pytest.raises(CommandError) as raised:
        call_command("whos_online_prune")
    assert str(raised.value).startswith(
        "A mistake in the settings, nothing pruned: WHOS_ONLINE_CACHE_ALIAS is 'presense', "
        "and CACHES gives no Redis cache for it"
    )
    assert "Redis failed" not in str(raised.value)


def test_batch_size_option_sets_how_many_go_per_call(
    redis_db: redis.Redis, settings: Any, people: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    *stale, fresh = people("a", "b", "c", "d", "e", "fresh")
    with time_machine.travel(NOW, tick=False) as traveller:
        for user in stale:
            presence.record_user(user)
        traveller.shift(300)
        presence.record_user(fresh)
        traveller.shift(301)
        out = StringIO()
        call_command("whos_online_prune", "--batch-size", "2", stdout=out)
    assert out.getvalue().strip() == "Pruned 5 stale member(s) and 0 stale guest(s) in 6 batch(es)."


def test_batch_size_below_one_is_a_command_error(redis_db: redis.Redis) -> None:
    with pytest.raises(CommandError, match="--batch-size must be at least 1"):
        call_command("whos_online_prune", "--batch-size", "0")


@pytest.mark.parametrize("stale, batches", [(999, 4), (1000, 5)])
def test_the_default_batch_is_a_thousand(
    redis_db: redis.Redis, settings: Any, stale: int, batches: int
) -> None:
    # users, hidden, the rooms' registry: one empty batch each; guests: one
    # batch, or a full one and an empty one when exactly 1,000 are stale
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    with time_machine.travel(NOW, tick=False):
        redis_db.zadd(key, {f"guest{i}": NOW.timestamp() - 3600 for i in range(stale)})
        out = StringIO()
        call_command("whos_online_prune", stdout=out)
    assert out.getvalue().strip() == (
        f"Pruned 0 stale member(s) and {stale} stale guest(s) in {batches} batch(es)."
    )


def test_help_says_what_it_does_and_each_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        call_command("whos_online_prune", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "Remove guests older than WHOS_ONLINE_MAX_AGE and members older than "
        "WHOS_ONLINE_RETENTION (by default the same) from the who's-online sets."
    ) in text
    assert "Members removed per Redis call;" in text and "(default: 1000)" in text
    assert 'Forget "most ever online" first' in text
