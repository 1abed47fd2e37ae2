-- leave(sets, mark, pk, room, now, ttl, channel): the member pk out of a
-- namespace's member sets users and hidden and their indexes (sets: those four
-- keys, see kept.lua); if they were listed there, its change mark is set to now
-- (kept ttl s) and its room ('' for the site) published on channel (see
-- announce.lua). Returns whether they were listed. The caller passes KEYS only.
--@include lib/announce.lua
local function leave(sets, mark, pk, room, now, ttl, channel)
  redis.call('ZREM', sets[3], pk)
  redis.call('ZREM', sets[4], pk)
  if redis.call('ZREM', sets[1], pk) + redis.call('ZREM', sets[2], pk) == 0 then return false end
  announce(mark, room, now, ttl, channel)
  return true
end
