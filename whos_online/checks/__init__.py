"""Django system checks: ``settings`` checks each WHOS_ONLINE_* value and the settings
together, ``deployment`` the site around whos_online (middleware, caches, URLconf)."""
