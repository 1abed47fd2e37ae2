"""The URLconf ``wagtail start`` writes, with whos_online's endpoint (tests/settings_wagtail.py)."""

from django.contrib import admin
from django.urls import include, path
from wagtail import urls as wagtail_urls
from wagtail.admin import urls as wagtailadmin_urls

urlpatterns = [
    path("django-admin/", admin.site.urls),
    path("admin/", include(wagtailadmin_urls)),
    path("whos-online/", include("whos_online.urls")),
    path("", include(wagtail_urls)),
]
