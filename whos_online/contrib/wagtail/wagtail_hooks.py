"""Wagtail's admin menu gets "Online now", the staff page of ``whos_online.contrib.admin``,
for staff.

Wagtail imports ``wagtail_hooks`` from each installed app: this one's once
``whos_online.contrib.wagtail`` is in ``INSTALLED_APPS``. Without the admin part the
page is not routed, and the item is not shown.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse, reverse_lazy
from django.utils.text import capfirst
from wagtail import hooks
from wagtail.admin.menu import MenuItem

from whos_online.models import OnlineNow

PAGE = "admin:whos_online_onlinenow_changelist"


class OnlineNowMenuItem(MenuItem):  # type: ignore[misc]
    """Shown to whom the page is (active staff), where it is routed: the admin part
    installed, Django's admin in the URLconf (the Wagtail starter's ``django-admin/``)."""

    def is_shown(self, request: HttpRequest) -> bool:
        user: Any = request.user
        if not (user.is_active and user.is_staff):
            return False
        try:
            reverse(PAGE)
        except NoReverseMatch:
            return False
        return True


@hooks.register("register_admin_menu_item")  # type: ignore[untyped-decorator]
def online_now() -> MenuItem:
    return OnlineNowMenuItem(
        capfirst(OnlineNow._meta.verbose_name_plural),
        reverse_lazy(PAGE),
        name="whos-online",
        icon_name="group",
        order=8000,
    )
