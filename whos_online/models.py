"""No tables: one unmanaged model only gives the admin its "Online now" page."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class OnlineNow(models.Model):
    """Stands for the admin page of whos_online.contrib.admin; the data lives in Redis."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = _("online now")
        verbose_name_plural = _("online now")
