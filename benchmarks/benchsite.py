"""The benchmarked site: its URLs and views, the control middlewares, its member, and requests.

The views do nothing, so a request's cost is the handler and middleware alone.
WSGI requests go to a sync view and ASGI requests to an async one, so neither
interface pays a thread hop for the view itself. Requests call Django's
``WSGIHandler`` / ``ASGIHandler`` directly: no server, no sockets but Redis's.
Every request carries a browser User-Agent (whos_online does not record bots).
A request without cookies comes from one of ``GUEST_POOL``'s addresses, which
every population holds, so recording updates a guest and the population stays
the same; one with cookies from the first of them, the address a guest's
"online" cookie was issued to (it is bound to that address).
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import importlib
import itertools
from types import ModuleType
from typing import Any, Awaitable, Callable, Iterator, Mapping
from unittest import mock

import redis
from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.test import RequestFactory
from django.test.utils import override_settings
from django.urls import include, path
from redis._parsers import _HiredisParser

GetResponse = Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]]

GUEST_POOL = [f"10.99.{i >> 8}.{i & 255}" for i in range(256)]
BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


def ok_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


async def ok_view_async(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [
    path("", ok_view),
    path("async/", ok_view_async),
    path("whos-online/", include("whos_online.urls")),
]
LIVE_PATH = "/whos-online/"


class PassThroughMiddleware:
    """Does nothing, in either mode: the floor any middleware costs, to read whos_online's against."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        return self.get_response(request)


class _SyncAndAsync:
    """A middleware that runs ``before(request)`` first, in either mode (as whos_online does)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.__acall__(request)
        self.before(request)
        return self.get_response(request)  # type: ignore[return-value]

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        await sync_to_async(self.before)(request)
        return await self.get_response(request)  # type: ignore[no-any-return, misc]

    def before(self, request: HttpRequest) -> None:
        raise NotImplementedError


class TouchUserMiddleware(_SyncAndAsync):
    """Resolves ``request.user``, as any site whose pages look at the user does.

    The control for a recording member: whos_online reads the user too, so what
    it adds on top is measured against this, not against bare Django.
    """

    def before(self, request: HttpRequest) -> None:
        if not request.user.is_authenticated:
            raise RuntimeError("the benchmark's member session is not logged in")


class PingMiddleware(_SyncAndAsync):
    """One Redis PING per request on whos_online's client: what one round trip costs in a request.

    Under ASGI it goes through ``sync_to_async`` as whos_online's record does.
    """

    def before(self, request: HttpRequest) -> None:
        store("connection").get_client().ping()


class RecordCallMiddleware(_SyncAndAsync):
    """Only the Redis call a guest's recording makes, its arguments made once.

    No cookie, no keyed hash, no key names: what is left is what redis-py costs
    for RECORD's EVALSHA, the floor under the recording path.
    """

    def before(self, request: HttpRequest) -> None:
        store("scripts").RECORD(store("connection").get_client(), *_record_arguments())


@functools.cache
def _record_arguments() -> tuple[Any, ...]:
    """RECORD's arguments for a guest of GUEST_POOL, as whos_online passed them once."""
    from whos_online import presence

    scripts = store("scripts")
    with mock.patch.object(scripts, "RECORD", wraps=scripts.RECORD) as record:
        presence.record_guest(GUEST_POOL[0])
    return tuple(record.call_args.args[1:])


@functools.cache
def store(name: str) -> ModuleType:
    """whos_online's module ``name`` of the Redis store (connection, scripts): in its
    ``store`` package, or at the top in a checkout from before it (instructions.py --before c56ff5b)."""
    try:
        return importlib.import_module(f"whos_online.store.{name}")
    except ModuleNotFoundError:
        return importlib.import_module(f"whos_online.{name}")


@functools.cache
def hiredis_client() -> redis.Redis:
    """whos_online's client with hiredis's parser and packer (WHOS_ONLINE_REDIS_CLIENT), one per run."""
    from bench_settings import REDIS_URL

    return redis.Redis.from_url(REDIS_URL, parser_class=_HiredisParser, socket_timeout=5)


def create_member() -> tuple[str, str]:
    """Create the tables, one user and a logged-in session; return (session key, username)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    user = User.objects.create_user("bench_member", password=None)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    assert session.session_key is not None
    return session.session_key, user.get_username()


class Wsgi:
    """Requests to ``path`` through a WSGIHandler built with ``middleware``."""

    def __init__(
        self,
        middleware: list[str],
        cookies: Mapping[str, str] = {},
        path: str = "/",
        headers: Mapping[str, str] = {},
        visitors: Iterator[Visitor] | None = None,
    ) -> None:
        with override_settings(MIDDLEWARE=middleware):  # the handler reads it when built
            self.handler = WSGIHandler()
        headers = {"User-Agent": BROWSER, **headers}
        if cookies:
            headers["Cookie"] = _cookie_header(cookies)
        environ = RequestFactory().get(path, headers=headers).environ
        self.environs: Iterator[dict[str, Any]] = (
            itertools.cycle([{**environ, "REMOTE_ADDR": ip} for ip in _pool(cookies)])
            if visitors is None
            else (
                {**environ, "REMOTE_ADDR": ip, "HTTP_COOKIE": _cookie_header(sent)}
                for ip, sent in visitors
            )
        )

    def __call__(self, n: int) -> None:
        handler, environs = self.handler, self.environs
        for _ in range(n):
            handler(next(environs), _start_response).close()

    def response(self) -> tuple[int, list[tuple[str, str]], bytes]:
        response = self.handler(next(self.environs), _start_response)
        body = b"".join(response)
        response.close()
        return response.status_code, list(response.items()) + _cookies(response), body


def _pool(cookies: Mapping[str, str]) -> list[str]:
    return GUEST_POOL[:1] if cookies else GUEST_POOL


def _cookie_header(cookies: Mapping[str, str]) -> str:
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


# A request's address and cookies, for a driver whose every request comes from another
# visitor (``visitors``): its request is made as it is sent, not ahead.
Visitor = tuple[str, Mapping[str, str]]


def new_guests() -> Iterator[Visitor]:
    """Guests never seen before, one per request: addresses from 10.0.0.0 up (GUEST_POOL's
    10.99 is millions of requests away)."""
    for i in itertools.count():
        yield f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}", {}


def new_members(n: int) -> Iterator[Visitor]:
    """``n`` logged-in members never recorded, one per request, then an error: each a user
    with a pk no population holds, and a session."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from django.contrib.sessions.models import Session
    from django.utils import timezone
    from django.utils.crypto import get_random_string

    backend = "django.contrib.auth.backends.ModelBackend"
    users = User.objects.bulk_create(
        [User(pk=NEW_MEMBER_PKS + i, username=f"bench_new_{i}", password="!") for i in range(n)]
    )
    expires, store = timezone.now() + datetime.timedelta(days=1), SessionStore()
    sessions = Session.objects.bulk_create(
        Session(
            session_key=get_random_string(32),
            session_data=store.encode(
                {
                    SESSION_KEY: str(user.pk),
                    BACKEND_SESSION_KEY: backend,
                    HASH_SESSION_KEY: user.get_session_auth_hash(),
                }
            ),
            expire_date=expires,
        )
        for user in users
    )
    for session in sessions:
        yield GUEST_POOL[0], {settings.SESSION_COOKIE_NAME: session.session_key}
    raise RuntimeError(f"the {n} new members ran out: make more")


# The new members' pks: above any population's (populations.py).
NEW_MEMBER_PKS = 10_000_000


def _start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
    return None


def _cookies(response: HttpResponseBase) -> list[tuple[str, str]]:
    return [("Set-Cookie", c.output(header="").strip()) for c in response.cookies.values()]


class Asgi:
    """Requests to ``path`` through an ASGIHandler; the n requests of a call share one loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        middleware: list[str],
        cookies: Mapping[str, str] = {},
        path: str = "/async/",
        headers: Mapping[str, str] = {},
        visitors: Iterator[Visitor] | None = None,
    ) -> None:
        self.loop = loop
        with override_settings(MIDDLEWARE=middleware):
            self.handler = ASGIHandler()
        raw = [(b"host", b"testserver"), (b"user-agent", BROWSER.encode())]
        raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        if cookies:
            raw.append((b"cookie", _cookie_header(cookies).encode()))
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1"}
        scope |= {"method": "GET", "scheme": "http", "path": path, "raw_path": path.encode()}
        scope |= {"query_string": b"", "root_path": "", "headers": raw}
        scope |= {"server": ("testserver", 80)}
        self.scopes: Iterator[dict[str, Any]] = (
            itertools.cycle([{**scope, "client": (ip, 50000)} for ip in _pool(cookies)])
            if visitors is None
            else (
                {
                    **scope,
                    "client": (ip, 50000),
                    "headers": [*raw, (b"cookie", _cookie_header(sent).encode())],
                }
                for ip, sent in visitors
            )
        )

    def __call__(self, n: int) -> None:
        self.loop.run_until_complete(self._serve(n, _discard))

    async def _serve(self, n: int, send: Callable[[Any], Awaitable[None]]) -> None:
        for _ in range(n):
            await self.handler(next(self.scopes), _Receive(), send)

    def response(self) -> tuple[int, list[tuple[str, str]], bytes]:
        messages: list[Any] = []

        async def send(message: Any) -> None:
            messages.append(message)

        self.loop.run_until_complete(self._serve(1, send))
        headers = [(k.decode(), v.decode()) for k, v in messages[0]["headers"]]
        return messages[0]["status"], headers, b"".join(m.get("body", b"") for m in messages[1:])


class _Receive:
    """The empty body once, then a wait that Django cancels after the response, as a server's."""

    def __init__(self) -> None:
        self.sent = False

    async def __call__(self) -> dict[str, Any]:
        if not self.sent:
            self.sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.get_running_loop().create_future()
        raise AssertionError("unreachable: Django cancels this wait")


async def _discard(message: Any) -> None:
    pass
