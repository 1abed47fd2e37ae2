from django.contrib.auth import authenticate, login
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import path

BLOCK = engines["django"].from_string("{% load whos_online %}{% whos_online %}")


def plain(request: HttpRequest) -> HttpResponse:
    """Touches neither the session nor the database."""
    return HttpResponse("ok")


def log_in(request: HttpRequest) -> HttpResponse:
    user = authenticate(request, username=request.POST["username"], password=request.POST["password"])
    login(request, user)
    return HttpResponse("welcome")


def block(request: HttpRequest) -> HttpResponse:
    return HttpResponse(BLOCK.render({}, request))


urlpatterns = [
    path("", plain),
    path("block/", block),
    path("login/", log_in),
]
