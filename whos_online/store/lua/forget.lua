-- A member leaves (a logout): out of the site's member sets, their card gone,
-- and out of every room they were in when the caller read their rooms. Each list
-- they left is published ('' for the site).
--
-- KEYS[1]    the site's users    KEYS[2]  its hidden
-- KEYS[3]    its kept users      KEYS[4]  its kept hidden (see lib/kept.lua)
-- KEYS[5]    the cards           KEYS[6]  the member's rooms, kind -> room
-- KEYS[7..]  per room in ARGV[3..]: its users, hidden, kept users, kept hidden
-- ARGV[1]    the member's pk
-- ARGV[2]    the notices channel
-- ARGV[3..]  the rooms, as KEYS[6] names them
-- Returns 1 if they were listed on the site, else 0. A room joined after the
-- caller's read stays in KEYS[6]: as a visit just after the logout would.
--@include lib/leave.lua
local rooms = {}
for i = 3, #ARGV do
  local first = 7 + 4 * (i - 3)
  leave({unpack(KEYS, first, first + 3)}, ARGV[1], ARGV[i], ARGV[2])
  rooms[ARGV[i]] = true
end
local where = redis.call('HGETALL', KEYS[6])
for j = 1, #where, 2 do
  if rooms[where[j + 1]] then redis.call('HDEL', KEYS[6], where[j]) end
end
redis.call('HDEL', KEYS[5], ARGV[1])
return leave({unpack(KEYS, 1, 4)}, ARGV[1], '', ARGV[2]) and 1 or 0
