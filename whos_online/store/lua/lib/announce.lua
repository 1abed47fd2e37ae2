-- announce(mark, room, now, ttl, channel): a namespace's picture changed: its
-- change mark is set to now (kept ttl s, for a hub that missed the notice) and
-- its room ('' for the site) published on channel (see realtime/hub.py); neither
-- if channel is '' (no WebSockets: no hub listens or reads the mark).
local function announce(mark, room, now, ttl, channel)
  if channel == '' then return end
  redis.call('SET', mark, now, 'EX', ttl)
  redis.call('PUBLISH', channel, room)
end
