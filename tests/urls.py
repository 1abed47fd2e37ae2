import io
import itertools

from django.contrib import admin
from django.contrib.auth import authenticate, login
from django.contrib.auth.models import User
from django.contrib.auth.views import LogoutView, redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.template import engines
from django.urls import include, path, re_path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_POST

from whos_online.rooms.pages import in_room

BLOCK = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
LIVE_BLOCK = engines["django"].from_string("{% load whos_online %}{% whos_online live=30 %}")
ROOM = engines["django"].from_string("{% load whos_online %}{% whos_here room %}")
JINJA_PAGE = engines["jinja2"].get_template("page.html")


def plain(request: HttpRequest) -> HttpResponse:
    """Touches neither the session nor the database."""
    return HttpResponse("ok")


@cache_control(max_age=60)
def cached_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def log_in(request: HttpRequest) -> HttpResponse:
    user = authenticate(
        request, username=request.POST["username"], password=request.POST["password"]
    )
    login(request, user)
    return block(request) if "block" in request.GET else HttpResponse("welcome")


def block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({}, request))


async def async_block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({}, request))  # on the event loop


def jinja_page(request: HttpRequest) -> HttpResponse:
    """The block, a room and presence dots from the Jinja2 backend."""
    members = [User.objects.get(username=name) for name in request.GET.getlist("member")]
    return HttpResponse(JINJA_PAGE.render({"room": "lobby", "members": members}, request))


def live_block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(LIVE_BLOCK.render({}, request))


@in_room(lambda request, pk: f"thread:{pk}")
def thread(request: HttpRequest, pk: int) -> HttpResponse:
    return HttpResponse(ROOM.render({"room": f"thread:{pk}"}, request))


@in_room(lambda request, slug: f"topic:{slug}")
def topic(request: HttpRequest, slug: str) -> HttpResponse:
    return HttpResponse(ROOM.render({"room": f"topic:{slug}"}, request))


@in_room(lambda request, pk: pk if pk > 0 else "")  # any value: an int, or empty (no room)
def post(request: HttpRequest, pk: int) -> HttpResponse:
    if pk > 100:
        raise Http404("no such post")
    return HttpResponse(ROOM.render({"room": pk if pk > 0 else ""}, request))


# A forum's topic page, its room named by parts as each engine's template says it.
TOPIC_PAGES = {
    "django": engines["django"].from_string(
        '{% load whos_online %}<h1>{{ topic.title }}</h1>{% whos_here "topic" topic.pk %}'
    ),
    "jinja2": engines["jinja2"].from_string(
        '<h1>{{ topic.title }}</h1>{{ whos_here("topic", topic.pk) }}'
    ),
    # What issue 27 found on a real forum: add of text and a number is "".
    "add": engines["django"].from_string(
        '{% load whos_online %}<h1>{{ topic.title }}</h1>{% whos_here "topic:"|add:topic.pk %}'
    ),
}
PROFILE = engines["django"].from_string(
    "{% load whos_online %}<h1>{{ person.username }}</h1>{% whos_here person %}"
)


@in_room(lambda request, engine, pk: ("topic", pk))
def forum_topic(request: HttpRequest, engine: str, pk: int) -> HttpResponse:
    topic = {"pk": pk, "title": f"Topic {pk}"}
    return HttpResponse(TOPIC_PAGES[engine].render({"topic": topic}, request))


@in_room(lambda request, pk: get_object_or_404(User, pk=pk))
def profile(request: HttpRequest, pk: int) -> HttpResponse:
    return HttpResponse(PROFILE.render({"person": get_object_or_404(User, pk=pk)}, request))


@in_room("lobby")
async def lobby(request: HttpRequest) -> HttpResponse:
    return HttpResponse(ROOM.render({"room": "lobby"}, request))


# A board app's views, named in its own namespace and not decorated: the site makes
# them rooms with WHOS_ONLINE_ROOMS (tests/test_url_rooms.py).
def board_topic(request: HttpRequest, slug: str, pk: str) -> HttpResponse:
    topic = {"pk": int(pk), "title": f"Topic {pk}"}
    if topic["pk"] > 100:
        raise Http404("no such topic")
    if topic["pk"] == 99 and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if topic["pk"] == 98:
        return HttpResponse("members only", status=403)
    return HttpResponse(TOPIC_PAGES["django"].render({"topic": topic}, request))


async def board_async_topic(request: HttpRequest, pk: int) -> HttpResponse:
    topic = {"pk": pk, "title": f"Topic {pk}"}
    return HttpResponse(TOPIC_PAGES["django"].render({"topic": topic}, request))


def board_feed(request: HttpRequest, pk: int) -> HttpResponse:
    """A page without the block."""
    return HttpResponse(f"<rss>topic {pk}</rss>", content_type="application/rss+xml")


board_urls = (
    [
        path("feed/<int:pk>/", board_feed, name="feed"),
        # An empty slug is a topic without a title.
        re_path(r"^topic/(?P<slug>[\w-]*)-(?P<pk>[0-9]+)/$", board_topic, name="topic"),
        path("async/<int:pk>/", board_async_topic, name="async_topic"),
    ],
    "board",
)


# Bodies for streaming and file responses: every byte value, more than one chunk.
PAYLOAD = bytes(range(256)) * 300
_renders = itertools.count(1)


def counter(request: HttpRequest) -> HttpResponse:
    """A different body each time the view runs, so a cache hit is visible."""
    return HttpResponse(f"render {next(_renders)}")


def stream(request: HttpRequest) -> StreamingHttpResponse:
    return StreamingHttpResponse(PAYLOAD[i : i + 4096] for i in range(0, len(PAYLOAD), 4096))


def download(request: HttpRequest) -> FileResponse:
    return FileResponse(io.BytesIO(PAYLOAD), filename="payload.bin")


def missing(request: HttpRequest) -> HttpResponse:
    raise Http404("no such thing")


def forbidden(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied


def broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in the view")


def gone(request: HttpRequest) -> HttpResponse:
    """A view that answers an error itself, with the block on the page."""
    return HttpResponse(BLOCK.render({}, request), status=410)


def streamed_not_found(request: HttpRequest) -> StreamingHttpResponse:
    """A 404 whose body (with the block) is rendered while the server sends it."""
    return StreamingHttpResponse((BLOCK.render({}, request) for _ in range(1)), status=404)


@require_POST
def post_only(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({}, request))


def error_page(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's error pages show the block, as a base template would."""
    status = 403 if isinstance(exception, PermissionDenied) else 404
    return HttpResponse(BLOCK.render({}, request), status=status)


handler403 = error_page
handler404 = error_page

urlpatterns = [
    path("", plain),
    path("counter/", counter),
    path("cached-page/", cached_page),
    path("stream/", stream),
    path("download/", download),
    path("block/", block),
    path("async-block/", async_block),
    path("live-block/", live_block),
    path("jinja/", jinja_page),
    path("thread/<int:pk>/", thread),
    path("lobby/", lobby),
    path("topic/<str:slug>/", topic),
    path("post/<int:pk>/", post),
    path("forum/<str:engine>/<int:pk>/", forum_topic),
    path("people/<int:pk>/", profile),
    path("board/", include(board_urls)),
    path("whos-online/", include("whos_online.urls")),
    path("admin/", admin.site.urls),
    path("login/", log_in),
    path("logout/", LogoutView.as_view(next_page="/")),
    path("missing/", missing),
    path("forbidden/", forbidden),
    path("broken/", broken),
    path("gone/", gone),
    path("post-only/", post_only),
    path("streamed-not-found/", streamed_not_found),
]
