"""Requests that are no visit record nothing and set no cookie.

Other methods than GET/HEAD/POST, error responses (the site's error pages
show the block: it still does not count them), health checks, and the paths
a site excludes; through the sync and the async handler. (A site's own
monitors: the recipe in docs/howto/proxies.md, tested in tests/test_docs.py.)
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client, RequestFactory

from tests import online_now
from tests.conftest import BROWSER, BrowserAsyncClient, BrowserClient
from tests.test_middleware import async_get
from whos_online import presence
from whos_online.middleware import WhosOnlineMiddleware

pytestmark = pytest.mark.django_db

CSRF = "django.middleware.csrf.CsrfViewMiddleware"


def nothing_recorded(response: Any) -> None:
    assert online_now.guest_count() == 0 and online_now.user_count() == 0
    assert "online" not in response.cookies


@pytest.mark.parametrize("method", ["options", "put", "patch", "delete", "trace"])
def test_other_methods_are_no_visits(redis_db: redis.Redis, round_trips: Any, method: str) -> None:
    response = getattr(BrowserClient(), method)("/block/")
    assert response.status_code == 200
    nothing_recorded(response)
    assert round_trips.records == 0


def logged_in() -> BrowserClient:
    """A member whose login (which records them at once) is forgotten again."""
    client, alice = BrowserClient(), User.objects.create_user("alice")
    client.force_login(alice)
    presence.forget_user(alice)
    return client


def test_a_member_sending_options_is_not_recorded(redis_db: redis.Redis) -> None:
    nothing_recorded(logged_in().options("/"))


def test_an_unknown_url_records_nothing_even_showing_the_block(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    response = BrowserClient().get("/no-such-page/")  # Django renders handler404, with the block
    assert response.status_code == 404
    nothing_recorded(response)
    assert round_trips.records == 0
    assert "0 users online" in response.content.decode()


@pytest.mark.parametrize(
    "path, status",
    [
        ("/missing/", 404),  # the view raised Http404
        ("/forbidden/", 403),  # the view raised PermissionDenied
    ],
)
def test_a_view_answering_an_error_takes_its_newcomer_back(
    redis_db: redis.Redis, path: str, status: int
) -> None:
    """Recorded before the view (its block may show them), taken off again after it."""
    response = BrowserClient().get(path)
    assert response.status_code == status
    nothing_recorded(response)


def test_a_view_answering_an_error_itself_sets_no_cookie(redis_db: redis.Redis) -> None:
    # The block is rendered before the status is known, so it counted the
    # viewer; the cookie is not set, as on every error response.
    response = BrowserClient().get("/gone/")
    assert response.status_code == 410
    assert "1 guest" in response.content.decode()
    assert "online" not in response.cookies


def test_a_block_streamed_after_an_error_status_records_nothing(redis_db: redis.Redis) -> None:
    response = BrowserClient().get("/streamed-not-found/")
    assert "0 users online" in b"".join(response.streaming_content).decode()
    nothing_recorded(response)


def test_a_405_records_nothing(redis_db: redis.Redis) -> None:
    response = BrowserClient().get("/post-only/")
    assert response.status_code == 405
    nothing_recorded(response)


def test_a_500_records_nothing(redis_db: redis.Redis) -> None:
    response = BrowserClient(raise_request_exception=False).get("/broken/")
    assert response.status_code == 500
    nothing_recorded(response)


def test_a_csrf_failure_records_nothing(redis_db: redis.Redis, settings: Any) -> None:
    settings.MIDDLEWARE = [CSRF, *settings.MIDDLEWARE]
    client = BrowserClient(enforce_csrf_checks=True)
    response = client.post("/post-only/", {"x": "1"})
    assert response.status_code == 403
    nothing_recorded(response)
    settings.MIDDLEWARE = [*settings.MIDDLEWARE[1:], CSRF]  # after whos_online: the same
    response = client.post("/post-only/", {"x": "1"})
    assert response.status_code == 403
    nothing_recorded(response)


def test_a_successful_post_is_a_visit_and_counts_on_its_page(redis_db: redis.Redis) -> None:
    response = BrowserClient().post("/post-only/", {"x": "1"})
    assert "1 guest" in response.content.decode()
    assert "online" in response.cookies


def test_a_page_without_the_block_records_after_the_view(
    redis_db: redis.Redis, round_trips: Any
) -> None:
    response = BrowserClient().get("/")
    assert round_trips.records == 1 and "online" in response.cookies


def test_the_block_records_the_viewer_once(redis_db: redis.Redis, round_trips: Any) -> None:
    response = BrowserClient().get("/block/")
    assert "1 guest" in response.content.decode()
    assert round_trips.records == 1 and "online" in response.cookies


@pytest.mark.parametrize(
    "user_agent",
    [
        "kube-probe/1.29",
        "ELB-HealthChecker/2.0",
        "GoogleHC/1.0",
        "Consul Health Check",
        "Envoy/HC",
        "Amazon-Route53-Health-Check-Service (ref 1; report http://amzn.to/1vsZADi)",
        "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
        "Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)",
    ],
)
def test_health_checkers_are_no_guests(
    redis_db: redis.Redis, round_trips: Any, user_agent: str
) -> None:
    response = BrowserClient().get("/", headers={"User-Agent": user_agent})
    assert round_trips.count == 0
    nothing_recorded(response)


def test_paths_the_site_excludes(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = ["/counter/", r"/thread/\d+/$", r".*\.json$"]
    client = BrowserClient()
    for path in ["/counter/", "/counter/?page=2", "/thread/7/"]:
        nothing_recorded(client.get(path))
    assert online_now.guest_count(room="thread:7") == 0
    assert "online" in client.get("/").cookies  # elsewhere: a visit


def test_the_async_handler_skips_the_same_requests(redis_db: redis.Redis, settings: Any) -> None:
    settings.WHOS_ONLINE_EXCLUDE_PATHS = ["/counter/"]
    client = BrowserAsyncClient()

    async def options() -> Any:
        return await client.options("/")

    nothing_recorded(async_to_sync(options)())
    nothing_recorded(async_get(client, "/no-such-page/"))
    nothing_recorded(async_get(client, "/missing/"))
    nothing_recorded(async_get(client, "/counter/"))
    nothing_recorded(async_get(client, "/", headers={"User-Agent": "kube-probe/1.29"}))
    response = async_get(client, "/block/")
    assert "1 guest" in response.content.decode() and "online" in response.cookies


def test_the_async_handler_records_after_an_async_view(redis_db: redis.Redis) -> None:
    response = async_get(BrowserAsyncClient(), "/lobby/")
    assert "online" in response.cookies
    assert online_now.guest_count() == 1


def test_a_plain_client_without_a_user_agent_is_still_no_guest(redis_db: redis.Redis) -> None:
    nothing_recorded(Client().get("/"))


@pytest.mark.parametrize("status, counted", [(199, False), (200, True), (399, True), (400, False)])
def test_only_a_2xx_or_3xx_response_is_a_visit(
    redis_db: redis.Redis, status: int, counted: bool
) -> None:
    def view(request: Any) -> HttpResponse:
        middleware.process_view(request, view, (), {})  # as Django's handler calls it
        return HttpResponse(status=status)

    middleware = WhosOnlineMiddleware(view)
    response = middleware(RequestFactory().get("/", HTTP_USER_AGENT=BROWSER))
    assert online_now.guest_count() == int(counted)
    assert ("online" in response.cookies) is counted
