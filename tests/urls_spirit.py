"""tests.urls with Spirit's URLconf included as its project template does (tests/settings_spirit.py)."""

from django.urls import include, path

from tests.urls import urlpatterns as site_urlpatterns

urlpatterns = [path("forum/", include("spirit.urls")), *site_urlpatterns]
