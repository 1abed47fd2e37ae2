-- announce(mark, room, now, ttl, channel): a namespace's picture changed: its
-- change mark is set to now (kept ttl s, for a hub that missed the notice) and
-- its room ('' for the site) published on channel (see realtime/hub.py), unless
-- channel is '' (no WebSockets: nobody listens).
local function announce(mark, room, now, ttl, channel)
  redis.call('SET', mark, now, 'EX', ttl)
  if channel ~= '' then redis.call('PUBLISH', channel, room) end
end
