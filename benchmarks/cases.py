"""What is timed: requests through Django's WSGI and ASGI handlers, block renders, bare Redis calls.

Requests call ``WSGIHandler`` / ``ASGIHandler`` directly (no server, no sockets
except Redis's), so a variant's cost is Django's handler plus its middleware.
Under ASGI every request of a slice runs in one event loop, with a ``receive``
that hands over the empty body and then waits, as a server's does while the
client stays connected. Every request carries a browser User-Agent (whos_online
does not record bots) and comes from one of ``GUEST_POOL``'s addresses.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from bench_settings import PREFIX, SESSION_AND_AUTH
from benchsite import ASYNC_PATH, SYNC_PATH
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpResponseBase
from django.template import engines
from django.test import RequestFactory
from django.test.utils import override_settings
from harness import Case, CheckFailed
from populations import GUEST_POOL

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
WHOS_ONLINE = "whos_online.middleware.WhosOnlineMiddleware"
TOUCH_USER = "benchsite.TouchUserMiddleware"
PING = "benchsite.PingMiddleware"
PASS_THROUGH = "benchsite.PassThroughMiddleware"
NAIVE = "baselines.NaiveSortedSetMiddleware"
CACHE_DICT = "baselines.CacheDictMiddleware"


def online_cookie_name() -> str:
    from whos_online.conf import conf

    return conf.cookie_name


@dataclass
class Site:
    """One variant of the site: its middleware, its settings, and what its requests carry."""

    middleware: list[str]
    settings: dict[str, Any]
    cookies: dict[str, str]
    sets_online_cookie: bool

    @property
    def overrides(self) -> dict[str, Any]:
        return {"MIDDLEWARE": self.middleware, **self.settings}

    @property
    def cookie_header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def check(self, status: int, body: bytes, online_cookie: bool) -> None:
        if status != 200 or body != b"ok":
            raise CheckFailed(f"unexpected response {status} {body[:80]!r}")
        if online_cookie != self.sets_online_cookie:
            raise CheckFailed(
                f"the online cookie was {'set' if online_cookie else 'not set'}, so this variant "
                "does not measure what it claims (a Redis failure, a bot verdict, or a throttle "
                "cookie that is not recognised)"
            )


def _start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
    return lambda data: None


class WsgiRunner:
    def __init__(self, site: Site) -> None:
        self.site = site
        with override_settings(
            **site.overrides
        ):  # the handler builds its chain from MIDDLEWARE now
            self.handler = WSGIHandler()
        headers = {"User-Agent": BROWSER}
        if site.cookies:
            headers["Cookie"] = site.cookie_header
        self.environ = RequestFactory().get(SYNC_PATH, headers=headers).environ
        self.addresses = itertools.cycle(GUEST_POOL)

    def inputs(self, n: int) -> list[Any]:
        return [{**self.environ, "REMOTE_ADDR": next(self.addresses)} for _ in range(n)]

    def timed(self, inputs: list[Any]) -> int:
        handler = self.handler
        start = time.perf_counter_ns()
        for environ in inputs:
            response = handler(environ, _start_response)
            for _chunk in response:
                pass
            response.close()
        return time.perf_counter_ns() - start

    def check(self, inputs: list[Any]) -> None:
        for environ in inputs:
            response: HttpResponseBase = self.handler(environ, _start_response)
            body = b"".join(response)
            response.close()
            self.site.check(response.status_code, body, online_cookie_name() in response.cookies)


class _Receive:
    """The (empty) request body once, then a wait that Django cancels after the response."""

    def __init__(self) -> None:
        self.body_sent = False

    async def __call__(self) -> dict[str, Any]:
        if not self.body_sent:
            self.body_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.get_running_loop().create_future()
        raise AssertionError("unreachable: Django cancels this wait")


async def _discard(message: Mapping[str, Any]) -> None:
    pass


class AsgiRunner:
    def __init__(self, site: Site, loop: asyncio.AbstractEventLoop) -> None:
        self.site = site
        self.loop = loop
        with override_settings(**site.overrides):
            self.handler = ASGIHandler()
        self.headers = [(b"host", b"testserver"), (b"user-agent", BROWSER.encode())]
        if site.cookies:
            self.headers.append((b"cookie", site.cookie_header.encode()))
        self.addresses = itertools.cycle(GUEST_POOL)

    def inputs(self, n: int) -> list[Any]:
        return [(self._scope(next(self.addresses)), _Receive()) for _ in range(n)]

    def _scope(self, address: str) -> dict[str, Any]:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": ASYNC_PATH,
            "raw_path": ASYNC_PATH.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": list(self.headers),
            "client": (address, 50000),
            "server": ("testserver", 80),
        }

    def timed(self, inputs: list[Any]) -> int:
        return self.loop.run_until_complete(self._serve(inputs))

    async def _serve(self, inputs: list[Any]) -> int:
        handler = self.handler
        start = time.perf_counter_ns()
        for scope, receive in inputs:
            await handler(scope, receive, _discard)
        return time.perf_counter_ns() - start

    def check(self, inputs: list[Any]) -> None:
        for scope, receive in inputs:
            messages: list[Mapping[str, Any]] = []

            async def send(message: Mapping[str, Any]) -> None:
                messages.append(message)

            self.loop.run_until_complete(self.handler(scope, receive, send))
            start = messages[0]
            body = b"".join(m.get("body", b"") for m in messages[1:])
            cookie = f"{online_cookie_name()}=".encode()
            sets_cookie = any(
                name.lower() == b"set-cookie" and value.startswith(cookie)
                for name, value in start["headers"]
            )
            self.site.check(start["status"], body, sets_cookie)


class RenderRunner:
    """Renders a template holding one block, as a page would."""

    def __init__(self, source: str, members: int) -> None:
        self.template = engines["django"].from_string(source)
        self.members = members

    def inputs(self, n: int) -> list[Any]:
        return [None] * n

    def timed(self, inputs: list[Any]) -> int:
        render = self.template.render
        start = time.perf_counter_ns()
        for _ in inputs:
            render()
        return time.perf_counter_ns() - start

    def check(self, inputs: list[Any]) -> None:
        for _ in inputs:
            html = self.template.render()
            shown = re.search(r"(\d+) members", html)
            if shown is None or int(shown.group(1)) < self.members:
                raise CheckFailed(f"the block does not show {self.members} members: {html[:300]!r}")


class CallRunner:
    """Calls a function once per operation, with one of GUEST_POOL's addresses."""

    def __init__(self, func: Callable[[str], object]) -> None:
        self.func = func
        self.addresses = itertools.cycle(GUEST_POOL)

    def inputs(self, n: int) -> list[Any]:
        return [next(self.addresses) for _ in range(n)]

    def timed(self, inputs: list[Any]) -> int:
        func = self.func
        start = time.perf_counter_ns()
        for address in inputs:
            func(address)
        return time.perf_counter_ns() - start

    def check(self, inputs: list[Any]) -> None:
        for address in inputs:
            self.func(address)


def online_tokens(session: dict[str, str], settings: dict[str, Any]) -> dict[str, str]:
    """The online cookie whos_online sets for a guest and for the member (one real request each)."""
    tokens = {}
    for who, cookies in (("guest", {}), ("member", session)):
        probe = WsgiRunner(Site([*SESSION_AND_AUTH, WHOS_ONLINE], settings, cookies, True))
        response = probe.handler(probe.inputs(1)[0], _start_response)
        if online_cookie_name() not in response.cookies:
            raise CheckFailed(
                f"whos_online set no online cookie for the {who} probe (Redis failed?)"
            )
        tokens[who] = response.cookies[online_cookie_name()].value
    return tokens


def whos_online_prefix(online: int) -> str:
    return f"{PREFIX}:wo{online}"


def naive_base(online: int) -> str:
    return f"{PREFIX}:naive{online}"


def cache_dict_key(online: int) -> str:
    return f"dict{online}"


def request_cases(
    group: str,
    runner: Callable[[Site], Any],
    session: dict[str, str],
    tokens: dict[str, str],
    recording_online: list[int],
    baseline_online: list[int],
) -> list[Case]:
    """Every request variant for one interface. ``tokens``: the online cookie of a guest and a member."""
    cookie = online_cookie_name()
    throttled_guest = {cookie: tokens["guest"]}
    throttled_member = {**session, cookie: tokens["member"]}
    whos_online = [*SESSION_AND_AUTH, WHOS_ONLINE]
    member_online = recording_online[len(recording_online) // 2]

    def case(
        label: str,
        implementation: str,
        site: Site,
        online: int | None = None,
        trips: int | None = None,
    ) -> Case:
        return Case(label, group, runner(site), implementation, online, site.overrides, trips)

    def prefix(online: int) -> dict[str, Any]:
        return {"WHOS_ONLINE_KEY_PREFIX": whos_online_prefix(online)}

    cases = [
        case("bare", "bare", Site(SESSION_AND_AUTH, {}, {}, False)),
        case(
            "bare, throttled guest's cookie",
            "bare",
            Site(SESSION_AND_AUTH, {}, throttled_guest, False),
        ),
        case(
            "bare, throttled member's cookies",
            "bare",
            Site(SESSION_AND_AUTH, {}, throttled_member, False),
        ),
        case(
            "bare + a do-nothing middleware, throttled guest's cookie",
            "bare",
            Site([*SESSION_AND_AUTH, PASS_THROUGH], {}, throttled_guest, False),
        ),
        case(
            "bare + request.user", "bare", Site([*SESSION_AND_AUTH, TOUCH_USER], {}, session, False)
        ),
        case("bare + one Redis PING", "bare", Site([*SESSION_AND_AUTH, PING], {}, {}, False)),
        case(
            "throttled guest", "whos_online", Site(whos_online, {}, throttled_guest, False), trips=0
        ),
        case(
            "throttled member",
            "whos_online",
            Site(whos_online, {}, throttled_member, False),
            trips=0,
        ),
        case(
            "recording member",
            "whos_online",
            Site(whos_online, prefix(member_online), session, True),
            member_online,
            trips=1,
        ),
    ]
    cases += [
        case("recording guest", "whos_online", Site(whos_online, prefix(n), {}, True), n, trips=1)
        for n in recording_online
    ]
    for n in baseline_online:
        cases += [
            case(
                "naive sorted set, every request",
                "naive sorted set",
                Site([*SESSION_AND_AUTH, NAIVE], {"BENCH_BASELINE_KEY": naive_base(n)}, {}, False),
                n,
            ),
            case(
                "cache dict, every request",
                "cache dict",
                Site(
                    [*SESSION_AND_AUTH, CACHE_DICT],
                    {"BENCH_BASELINE_KEY": cache_dict_key(n)},
                    {},
                    False,
                ),
                n,
            ),
        ]
    return cases


def render_cases(render_online: list[int], baseline_online: list[int]) -> list[Case]:
    cases = [
        Case(
            "{% whos_online %}",
            "render",
            RenderRunner("{% load whos_online %}{% whos_online %}", n),
            "whos_online",
            n,
            {"WHOS_ONLINE_KEY_PREFIX": whos_online_prefix(n)},
            target_trips=1,
        )
        for n in render_online
    ]
    for n in baseline_online:
        cases += [
            Case(
                "{% naive_online %}",
                "render",
                RenderRunner("{% load baselines %}{% naive_online %}", n),
                "naive sorted set",
                n,
                {"BENCH_BASELINE_KEY": naive_base(n)},
            ),
            Case(
                "{% cache_dict_online %}",
                "render",
                RenderRunner("{% load baselines %}{% cache_dict_online %}", n),
                "cache dict",
                n,
                {"BENCH_BASELINE_KEY": cache_dict_key(n)},
            ),
        ]
    return cases


def redis_cases(online: int) -> list[Case]:
    """Redis alone, outside any request: the yardsticks for reading the request figures."""
    from whos_online import presence
    from whos_online.connection import get_client

    return [
        Case("PING", "Redis", CallRunner(lambda _address: get_client().ping()), target_trips=1),
        Case(
            "presence.record_guest()",
            "Redis",
            CallRunner(presence.record_guest),
            "whos_online",
            online,
            {"WHOS_ONLINE_KEY_PREFIX": whos_online_prefix(online)},
            target_trips=1,
        ),
    ]
