"""``path("whos-online/", include("whos_online.urls"))`` adds the live block's endpoint."""

from django.urls import path

from whos_online import views

app_name = "whos_online"
urlpatterns = [path("", views.live, name="live")]
