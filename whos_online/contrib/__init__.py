"""Optional parts, each an app a site adds to ``INSTALLED_APPS`` beside ``whos_online``
when it wants it: ``whos_online.contrib.channels`` (live blocks over WebSockets) and
``whos_online.contrib.wagtail`` (Wagtail pages as rooms, "Online now" in Wagtail's menu).
The core never imports them (``.importlinter``); they build on its public modules.
"""
