-- enter_room(member_rooms, room, ttl): a member is in one room of a kind (its
-- name up to the first ':') at a time: recorded in topic:2, they leave topic:1.
-- Notes room as the member's room of its kind; returns the room of that kind they
-- were in until now, if another (the caller takes them out of it: leave_room.lua).
local function enter_room(member_rooms, room, ttl)
  local kind = string.match(room, '^[^:]*')
  local was_in = redis.call('HGET', member_rooms, kind)
  redis.call('HSET', member_rooms, kind, room)
  redis.call('EXPIRE', member_rooms, ttl)
  if was_in and was_in ~= room then return was_in end
  return false
end
