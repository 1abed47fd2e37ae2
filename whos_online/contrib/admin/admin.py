"""The site owner's "Online now" page in the Django admin (staff only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.text import capfirst

from whos_online.conf import conf
from whos_online.contrib.admin import chart, stats
from whos_online.models import OnlineNow
from whos_online.store import failsafe, reading

# Members listed on the page; the counts cover everyone.
PAGE_LIMIT = 500


@admin.register(OnlineNow)
class OnlineNowAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """A read-only page instead of a change list: there are no rows, only Redis."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            return self.admin_site.login(request)
        return TemplateResponse(
            request,
            "admin/whos_online/online_now.html",
            {
                **self.admin_site.each_context(request),
                "title": capfirst(self.model._meta.verbose_name_plural),
                "opts": self.model._meta,
                "page": failsafe.call(_page, self.admin_site.name),
            },
        )


def _page(admin_site: str) -> dict[str, Any]:
    """Everything the page shows, read from Redis (3 round trips)."""
    online = reading.read(limit=PAGE_LIMIT, staff_view=True, day=True)  # a staff page
    samples = stats.history()
    days = stats.daily_visitors()  # today first
    # From the first day anyone came: a new site's table is not a month of zeros.
    while days and not days[-1].total:
        days.pop()
    return {
        "days": days,
        "approximate": conf.guest_counting == "approximate",
        "online": online,
        "members": [(member, _change_url(admin_site, member.pk)) for member in online.members],
        "chart": chart.draw(samples),
        "samples": len(samples),
    }


def _change_url(admin_site: str, pk: str) -> str | None:
    """The member's page in this admin, if the user model is registered there."""
    opts = get_user_model()._meta
    try:
        return reverse(f"{admin_site}:{opts.app_label}_{opts.model_name}_change", args=[pk])
    except NoReverseMatch:
        return None
