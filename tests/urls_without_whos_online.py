"""A URLconf that forgot ``include("whos_online.urls")``."""

from django.urls import path

from tests.urls import plain

urlpatterns = [path("", plain)]
