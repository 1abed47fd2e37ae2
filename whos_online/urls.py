"""``path("whos-online/", include("whos_online.urls"))`` adds the live block's endpoint and
the beacon of blocks on pages a cache shares."""

from django.urls import path

from whos_online import views

app_name = "whos_online"
urlpatterns = [
    path("", views.live, name="live"),
    path("beacon/", views.beacon, name="beacon"),
]
