-- Prunes rooms' sorted sets of members scored below ARGV[1], removing at most
-- ARGV[2] in all, so one call stays short however many rooms and members it is
-- given.
--
-- KEYS[1..]  the rooms' sorted sets (users, hidden and guests of each)
-- ARGV[1]    the score bound, exclusive: '(<time>'
-- ARGV[2]    the most to remove
-- Returns {removed, 1 if it stopped at the limit else 0}.
local removed, budget = 0, tonumber(ARGV[2])
for _, key in ipairs(KEYS) do
  if budget == 0 then return {removed, 1} end
  local n = math.min(redis.call('ZCOUNT', key, '-inf', ARGV[1]), budget)
  if n > 0 then
    redis.call('ZREMRANGEBYRANK', key, 0, n - 1)
    removed, budget = removed + n, budget - n
  end
end
return {removed, 0}
