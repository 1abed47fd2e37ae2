"""The URLconf of tests/test_server_sent_events.py's runserver: docs/howto/server-sent-events.md's
view, word for word, at the path the how-to routes it."""

import re
from pathlib import Path
from typing import Any

from django.urls import path

HOWTO = Path(__file__).resolve().parents[2] / "docs/howto/server-sent-events.md"
(EVENTS,) = re.findall(r"```python\n# events.py\n(.*?)```", HOWTO.read_text(), re.S)
events: dict[str, Any] = {"__name__": __name__}
exec(EVENTS, events)
online_events = events["online_events"]

urlpatterns = [path("online/events/", online_events)]
