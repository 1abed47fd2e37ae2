-- A member who moved to another room of the same kind (record.lua named the
-- room they left) leaves it: out of its member sets, the room published. Not if
-- they are back in it already (another tab).
--
-- KEYS[1]  the member's rooms, kind -> room
-- KEYS[2]  the room's users    KEYS[3]  its hidden
-- KEYS[4]  its kept users      KEYS[5]  its kept hidden (see lib/kept.lua)
-- ARGV[1]  the member's pk
-- ARGV[2]  the room left
-- ARGV[3]  its kind
-- ARGV[4]  the notices channel
-- Returns 1 if they were listed there, else 0.
--@include lib/leave.lua
if redis.call('HGET', KEYS[1], ARGV[3]) == ARGV[2] then return 0 end
return leave({unpack(KEYS, 2, 5)}, ARGV[1], ARGV[2], ARGV[4]) and 1 or 0
