"""Guest identity: one visitor is one guest, no address is stored, floods are bounded."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
import redis
import time_machine

from tests import online_now
from tests.conftest import NOW, BrowserClient
from whos_online import presence
from whos_online.conf import Settings
from whos_online.store import counting, recording, stats
from whos_online.store.addresses import guest_id

pytestmark = pytest.mark.django_db


def guests(redis_db: redis.Redis, settings: Any) -> list[bytes]:
    return list(redis_db.zrange(f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests", 0, -1))


def test_privacy_addresses_in_one_ipv6_64_are_one_guest(redis_db: redis.Redis) -> None:
    presence.record_guest("2001:db8:1:2:aaaa::1")
    presence.record_guest("2001:db8:1:2:bbbb:cccc:dddd:eeee")
    assert online_now.guest_count() == 1
    presence.record_guest("2001:db8:1:3::1")
    assert online_now.guest_count() == 2


def test_ipv6_grouping_follows_the_setting(
    redis_db: redis.Redis, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Settings, "ipv6_prefix", 128)
    presence.record_guest("2001:db8:1:2::1")
    presence.record_guest("2001:db8:1:2::2")
    assert online_now.guest_count() == 2
    monkeypatch.setattr(Settings, "ipv6_prefix", 48)
    presence.record_guest("2001:db8:1:ffff::9")
    assert online_now.guest_count() == 3  # a new id space: one more guest, not two


def test_a_guest_is_the_salted_hmac_of_its_address_under_the_secret_key(
    redis_db: redis.Redis, settings: Any
) -> None:
    # The ids every earlier release stored (they derived salted_hmac's key
    # themselves), written out: an upgrade must not count everyone online twice.
    BrowserClient().get("/", REMOTE_ADDR="::ffff:203.0.113.7")
    assert guests(redis_db, settings) == [b"dd6980c272c77701"]
    settings.SECRET_KEY = "another-secret"
    BrowserClient().get("/", REMOTE_ADDR="203.0.113.7")
    assert sorted(guests(redis_db, settings)) == [b"85fa7a46918a418b", b"dd6980c272c77701"]


ADDRESSES = ["203.0.113.7", "198.51.100.23", "2001:db8:1:2:3:4:5:6", "::ffff:192.0.2.99"]


def traces(address: str) -> list[bytes]:
    """Every spelling of an address that could give it away."""
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    forms = [ip, mapped] if mapped else [ip]
    found = []
    for form in forms:
        found += [
            str(form).encode(),
            form.exploded.encode(),
            form.packed,
            form.packed.hex().encode(),
        ]
    if ip.version == 6 and not mapped:
        found += [str(ipaddress.ip_network(f"{address}/64", strict=False).network_address).encode()]
    return found


def test_no_trace_of_any_address_in_any_key_or_member(redis_db: redis.Redis) -> None:
    for address in ADDRESSES:
        BrowserClient().get("/", REMOTE_ADDR=address)
        BrowserClient().get("/block/", REMOTE_ADDR=address)
    presence.prune()
    assert online_now.guest_count() == len(ADDRESSES)
    # Everything in the database, not only the keys we expect to have written.
    dump = b""
    for key in redis_db.scan_iter(count=1000):
        dump += key
        if redis_db.type(key) == b"zset":
            dump += b"".join(m for m, _ in redis_db.zrange(key, 0, -1, withscores=True))
        else:
            dump += redis_db.dump(key) or b""
    for address in ADDRESSES:
        for trace in traces(address):
            assert trace not in dump, (address, trace)


def test_members_are_short_enough_for_the_compact_encoding(
    redis_db: redis.Redis, settings: Any
) -> None:
    for i in range(10):
        presence.record_guest(f"203.0.113.{i}")
    # zset-max-listpack-value is 64 bytes by default
    assert all(len(member) == 16 for member in guests(redis_db, settings))


@pytest.mark.parametrize("redis_db", ["real"], indirect=True)  # fakeredis has no OBJECT
def test_real_redis_keeps_a_small_guest_set_compact(redis_db: redis.Redis, settings: Any) -> None:
    for i in range(100):
        presence.record_guest(f"203.0.113.{i}")
    assert redis_db.object("encoding", f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests") == b"listpack"


def test_at_the_cap_newcomers_wait_and_the_guests_counted_stay(
    redis_db: redis.Redis,
    settings: Any,
    round_trips: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Settings, "max_guests", 3)
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False) as traveller:
        for i in range(1, 6):
            presence.record_guest(f"203.0.113.{i}")
            traveller.shift(1)
        assert round_trips.count == 5  # the cap costs no extra round trip
        first = {guest_id(f"203.0.113.{i}").encode() for i in (1, 2, 3)}
        assert set(guests(redis_db, settings)) == first
        presence.record_guest("203.0.113.1")  # a guest already counted is still seen
        # 203.0.113.2 and .3 leave the window; .1 is exactly at its start, still in it.
        traveller.shift(600)
        presence.record_guest("203.0.113.4")
        presence.record_guest("203.0.113.5")
        assert online_now.guest_count() == 3
        newest = {guest_id(f"203.0.113.{i}").encode() for i in (1, 4, 5)}
        assert set(guests(redis_db, settings)) == newest


def test_rotating_forwarded_addresses_cannot_grow_the_set(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.WHOS_ONLINE_PROXIES = 1
    monkeypatch.setattr(Settings, "max_guests", 50)
    for i in range(200):
        BrowserClient().get("/", HTTP_X_FORWARDED_FOR=f"10.{i // 256}.{i % 256}.1")
    assert redis_db.zcard(f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests") == 50


def test_every_key_written_carries_a_ttl(
    redis_db: redis.Redis, settings: Any, django_user_model: Any
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 600
    client = BrowserClient()
    with time_machine.travel(NOW, tick=False):
        client.get("/", REMOTE_ADDR="203.0.113.7")
        client.force_login(django_user_model.objects.create_user("alice"))
        client.get("/block/")
        presence.prune()  # it writes the peak
    prefix = settings.WHOS_ONLINE_KEY_PREFIX
    hour, day = int(NOW.timestamp() // 3600), counting.local_date(NOW.timestamp()).isoformat()
    ttls = {
        key.decode().removeprefix(f"{prefix}:"): redis_db.ttl(key)
        for key in redis_db.scan_iter(match=f"{prefix}:*")
    }
    # The per-hour and per-day HyperLogLogs (counting.py) are tested in test_counting.py;
    # prune's union of the past hours (fakeredis makes none of nothing) expires too.
    assert set(ttls) - {f"guests:hour:past:{hour}", f"members:hour:past:{hour}"} == {
        "users",
        "cards",
        "guests",
        "peak",
        "history",
        f"guests:hour:{hour}",
        f"members:hour:{hour}",
        f"guests:day:{day}",
        f"members:day:{day}",
    }
    assert 0 < ttls["users"] <= 600 and 0 < ttls["cards"] <= 600 and 0 < ttls["guests"] <= 600
    assert 0 < ttls["peak"] <= stats.PEAK_TTL  # "most ever online" outlives the window
    assert 0 < ttls["history"] <= stats.HISTORY_SECONDS  # the admin's 24-hour chart


def test_far_over_the_cap_each_write_trims_a_bounded_number(
    redis_db: redis.Redis,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # e.g. right after the guests cap was lowered: no single write may
    # block Redis by removing everything stale over the cap at once.
    key = f"{settings.WHOS_ONLINE_KEY_PREFIX}:guests"
    settings.WHOS_ONLINE_MAX_AGE = 600
    with time_machine.travel(NOW, tick=False):
        redis_db.zadd(key, {f"old{i}": NOW.timestamp() - 700 - i for i in range(500)})
        monkeypatch.setattr(Settings, "max_guests", 10)
        presence.record_guest("203.0.113.1")
        assert redis_db.zcard(key) == 500 - recording.TRIM_PER_WRITE  # refused, room made
        for i in range(2, 7):
            presence.record_guest(f"203.0.113.{i}")
        assert redis_db.zcard(key) == 10
        assert guest_id("203.0.113.6").encode() in redis_db.zrange(key, 0, -1)


def test_the_whole_64_is_one_guest_down_to_its_first_host_bit(redis_db: redis.Redis) -> None:
    # the two differ only in bit 65, the first bit a /64 leaves to the device
    BrowserClient().get("/", REMOTE_ADDR="2001:db8:1:2::1")
    BrowserClient().get("/", REMOTE_ADDR="2001:db8:1:2:8000::1")
    assert online_now.guest_count() == 1
