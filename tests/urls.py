import io
import itertools

from django.contrib import admin
from django.contrib.auth import authenticate, login
from django.contrib.auth.models import User
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.template import engines
from django.urls import include, path
from django.views.decorators.cache import cache_control

from whos_online.rooms import in_room

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
    return HttpResponse("welcome")


def block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({}, request))


def jinja_page(request: HttpRequest) -> HttpResponse:
    """The block, a room and presence dots from the Jinja2 backend."""
    members = [User.objects.get(username=name) for name in request.GET.getlist("member")]
    return HttpResponse(JINJA_PAGE.render({"room": "lobby", "members": members}, request))


def live_block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(LIVE_BLOCK.render({}, request))


@in_room(lambda request, pk: f"thread:{pk}")
def thread(request: HttpRequest, pk: int) -> HttpResponse:
    return HttpResponse(ROOM.render({"room": f"thread:{pk}"}, request))


@in_room("lobby")
async def lobby(request: HttpRequest) -> HttpResponse:
    return HttpResponse(ROOM.render({"room": "lobby"}, request))


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


urlpatterns = [
    path("", plain),
    path("counter/", counter),
    path("cached-page/", cached_page),
    path("stream/", stream),
    path("download/", download),
    path("block/", block),
    path("live-block/", live_block),
    path("jinja/", jinja_page),
    path("thread/<int:pk>/", thread),
    path("lobby/", lobby),
    path("whos-online/", include("whos_online.urls")),
    path("admin/", admin.site.urls),
    path("login/", log_in),
]
