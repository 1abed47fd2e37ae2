"""Pages for the simulated visitors: a home page with the block, a plain page, a login."""

import os

from django.contrib.auth import authenticate, login
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.template import engines
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from tests.load_site import block_age

PAGE = engines["django"].from_string(
    "{% load whos_online %}<!doctype html><title>{{ title }}</title>"
    "<p>Hello, {% if user.is_authenticated %}{{ user.get_username }}{% else %}guest{% endif %}.</p>"
    "{% if block %}<aside>{% whos_online %}</aside>{% endif %}"
)


def home(request: HttpRequest) -> HttpResponse:
    page, age = block_age.measure(lambda: PAGE.render({"title": "Home", "block": True}, request))
    response = HttpResponse(page)
    # Which worker answered: the fault tests read whos_online's log lines per process.
    response["X-Worker"] = str(os.getpid())
    if age is not None:  # the fault tests check no page shows a block past the stale limit
        response["X-Block-Age"] = repr(age)  # unrounded: 9.9996 s is not 10 s
    return response


def about(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE.render({"title": "About", "block": False}, request))


@csrf_exempt  # test-only: the load generator posts credentials without a form round trip
def log_in(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return HttpResponse(status=405)
    user = authenticate(
        request, username=request.POST.get("username"), password=request.POST.get("password")
    )
    if user is None:
        return HttpResponseForbidden("bad credentials")
    login(request, user)
    return HttpResponse(f"Welcome, {user.get_username()}.")


def ready(request: HttpRequest) -> HttpResponse:
    """For the readiness probe; it sends no X-Forwarded-For, so it is never counted."""
    return HttpResponse("ok")


urlpatterns = [
    path("", home),
    path("about/", about),
    path("login/", log_in),
    path("ready/", ready),
]
