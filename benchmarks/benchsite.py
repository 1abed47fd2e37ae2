"""The benchmarked site's URLs and views, the control middlewares, and its one logged-in member.

The views do nothing, so a request's cost is the handler and middleware alone.
WSGI requests go to a sync view and ASGI requests to an async one, so neither
interface pays a thread hop for the view itself.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.urls import path

GetResponse = Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]]

SYNC_PATH = "/"
ASYNC_PATH = "/async/"


def ok_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


async def ok_view_async(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [path("", ok_view), path("async/", ok_view_async)]


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
        from whos_online.connection import get_client

        get_client().ping()


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
