-- announce(room, channel): a namespace's picture changed: its room ('' for the
-- site) is published on channel, for whoever pushes changes (whos_online.push.notices).
local function announce(room, channel)
  redis.call('PUBLISH', channel, room)
end
