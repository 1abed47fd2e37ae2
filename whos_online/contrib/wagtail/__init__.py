"""Wagtail pages as rooms (``pages``) and "Online now" in Wagtail's admin menu
(``wagtail_hooks``): the optional part that needs Wagtail, with
``"whos_online.contrib.wagtail"`` in ``INSTALLED_APPS``.
"""
