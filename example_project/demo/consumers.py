"""The thread's chat: a site's own consumer that gets presence by inheriting the mixin.

Messages go to everyone on the thread through the channel layer (in memory on
the embedded default, channels-redis with REDIS_URL, so several server
processes share them). Being connected here makes a member "here" in the
thread's room and online on the site, like the live block's own socket.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from whos_online.contrib.channels.consumers import PresenceMixin

MAX_MESSAGE = 500


class ChatConsumer(PresenceMixin, AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        self.group = "chat-" + self.presence_room().replace(":", "-")
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        user = self.scope["user"]
        text = str(content.get("text", "")).strip()[:MAX_MESSAGE]
        if text and user.is_authenticated:
            name = user.get_full_name() or user.get_username()
            await self.channel_layer.group_send(
                self.group, {"type": "chat.message", "name": name, "text": text}
            )

    async def chat_message(self, event: dict[str, Any]) -> None:
        await self.send_json({"name": event["name"], "text": event["text"]})
