"""Rooms: presence in one page or object. ``whos_online.room_names`` makes a room's one
name, ``pages`` puts a site's own views in rooms (``@in_room``), ``url_names`` the views
it does not own (``WHOS_ONLINE_ROOMS``)."""
