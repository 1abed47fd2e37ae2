from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

BLOCK = engines["django"].from_string("{% load whos_online %}{% whos_online %}")


def plain(request: HttpRequest) -> HttpResponse:
    """Touches neither the session nor the database."""
    return HttpResponse("ok")


def block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({}, request))


urlpatterns = [
    path("", plain),
    path("block/", block),
]
