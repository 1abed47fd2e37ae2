-- The keys of rooms record.lua dropped from the registry over the rooms' cap
-- (the least recently visited) are deleted, unless a visitor registered the
-- room again since.
--
-- KEYS[1]    the rooms' registry
-- KEYS[2..]  each room's keys, the same number per room, in ARGV's order
-- ARGV[1..]  the rooms
-- Returns how many rooms' keys were deleted.
local per, dropped = (#KEYS - 1) / #ARGV, 0
for i = 1, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('DEL', unpack(KEYS, 2 + per * (i - 1), 1 + per * i))
    dropped = dropped + 1
  end
end
return dropped
