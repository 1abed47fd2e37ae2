"""The demo's pages, plus Django's own login and logout views."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from demo import views

urlpatterns = [
    path("", views.home, name="home"),
    path("about/", views.about, name="about"),
    path("members/", views.members, name="members"),
    # By pk, as whos_online knows members: a login id (or email address) never shows in a URL.
    path("members/<int:pk>/", views.profile, name="profile"),
    path("avatars/<int:pk>.svg", views.avatar, name="avatar"),
    # Browsers ask for /favicon.ico on pages without an icon link (the admin's).
    path("favicon.svg", views.favicon, name="favicon"),
    path("favicon.ico", views.favicon),
    path("thread/", views.thread, name="thread"),
    path("simulate/", views.simulate_visitors, name="simulate"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("whos-online/", include("whos_online.urls")),
    path("admin/", admin.site.urls),
]
