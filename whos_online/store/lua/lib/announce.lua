-- announce(room, channel): a namespace's picture changed: its room ('' for the
-- site) is published on channel (see realtime/hub.py); not if channel is '' (no
-- WebSockets: no hub listens).
local function announce(room, channel)
  if channel ~= '' then redis.call('PUBLISH', channel, room) end
end
