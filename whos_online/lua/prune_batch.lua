-- Removes at most ARGV[2] of the oldest members scored below ARGV[1] from a
-- sorted set, and their cards. One call is atomic, so a member re-recorded
-- meanwhile (now the newest) is never among the removed, and it is short, so
-- Redis keeps serving the site between calls.
--
-- KEYS[1]  the sorted set
-- KEYS[2]  the cards hash (KEYS[1] itself for a set without cards)
-- ARGV[1]  the score bound, exclusive: '(<time>'
-- ARGV[2]  the most to remove
-- Returns how many were removed.
local stale = redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1])
local n = math.min(stale, tonumber(ARGV[2]))
if n > 0 then
  if KEYS[2] ~= KEYS[1] then
    -- unpack() takes a few thousand values at most: HDEL in chunks.
    local pks = redis.call('ZRANGE', KEYS[1], 0, n - 1)
    for i = 1, #pks, 1000 do
      redis.call('HDEL', KEYS[2], unpack(pks, i, math.min(i + 999, #pks)))
    end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1)
end
return n
