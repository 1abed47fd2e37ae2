from __future__ import annotations

from django.contrib import admin

from accounts.models import EmailUser


@admin.register(EmailUser)
class EmailUserAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Enough for whos_online's "Online now" page to link each member to their change page."""

    list_display = ("email", "full_name", "is_staff", "is_active")
    search_fields = ("email", "full_name")
    fields = ("email", "full_name", "is_active", "is_staff", "is_superuser", "last_login")
    readonly_fields = ("last_login",)
