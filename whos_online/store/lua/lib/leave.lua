-- leave(sets, pk, room, channel): the member pk out of a namespace's member sets
-- users and hidden and their indexes (sets: those four keys, see kept.lua); if
-- they were listed there, its room is announced. Returns whether they were listed.
--@include lib/announce.lua
local function leave(sets, pk, room, channel)
  redis.call('ZREM', sets[3], pk)
  redis.call('ZREM', sets[4], pk)
  if redis.call('ZREM', sets[1], pk) + redis.call('ZREM', sets[2], pk) == 0 then return false end
  announce(room, channel)
  return true
end
