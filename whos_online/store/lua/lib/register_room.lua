-- register_room(rooms, room, now, ttl, cap, trim): the room into the rooms'
-- registry, scored by its last visit. Over the cap, the least recently visited
-- (at most trim of them) leave it; returns their names, for the caller to delete
-- their keys (drop_rooms.lua: a script touches only the keys it declares).
local function register_room(rooms, room, now, ttl, cap, trim)
  redis.call('ZADD', rooms, now, room)
  redis.call('EXPIRE', rooms, ttl)
  local dropped, over = {}, redis.call('ZCARD', rooms) - cap
  if over > 0 then
    local popped = redis.call('ZPOPMIN', rooms, math.min(over, trim))
    for i = 1, #popped, 2 do dropped[#dropped + 1] = popped[i] end
  end
  return dropped
end
