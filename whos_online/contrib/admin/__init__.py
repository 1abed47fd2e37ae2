"""The "Online now" page in Django's admin, with its chart of the day and its visitors
per day: the optional part for sites with ``django.contrib.admin``
(``"whos_online.contrib.admin"`` in ``INSTALLED_APPS``). ``stats`` reads what the page
shows beside who is online: the samples ``whos_online_prune`` takes, the visitors per day.
"""
