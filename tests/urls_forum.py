"""tests.urls with django-machina's URLconf included as its docs say (tests/settings_forum.py)."""

from django.urls import include, path

from tests.urls import urlpatterns as site_urlpatterns

urlpatterns = [path("forum/", include("machina.urls")), *site_urlpatterns]
