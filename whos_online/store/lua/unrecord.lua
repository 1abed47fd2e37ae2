-- Takes a visitor back out of a namespace whose page was not shown (the view
-- answered an error, or a redirect in a room, after the record made before it):
-- out of its sets and indexes, and out of the member's rooms if it is their room
-- of its kind. A room nobody is left in loses its keys and its place in the
-- registry, so a failed view leaves no room behind.
--
-- KEYS[1..7]  the namespace's keys: users, hidden, guests, live, left, kept users,
--             kept hidden (conf.namespace_keys)
-- KEYS[8]     the rooms' registry
-- KEYS[9]     the member's rooms, kind -> room (a guest or the site: KEYS[8] again)
-- ARGV[1]     the visitor (a pk or a guest id)
-- ARGV[2]     the room ('' for the site)   ARGV[3]  its kind
-- ARGV[4]     '1' for a member in a room, else ''
-- ARGV[5]     the notices channel
-- Returns 1 if the room's keys were deleted, else 0.
--@include lib/announce.lua
local gone = 0
for _, i in ipairs({1, 2, 3, 6, 7}) do gone = gone + redis.call('ZREM', KEYS[i], ARGV[1]) end
if ARGV[4] == '1' and redis.call('HGET', KEYS[9], ARGV[3]) == ARGV[2] then
  redis.call('HDEL', KEYS[9], ARGV[3])
end
local left = 0
for i = 1, 4 do left = left + redis.call('ZCARD', KEYS[i]) end
if ARGV[2] ~= '' and left == 0 then
  redis.call('ZREM', KEYS[8], ARGV[2])
  redis.call('DEL', unpack(KEYS, 1, 7))
  return 1
end
if gone > 0 then announce(ARGV[2], ARGV[5]) end
return 0
