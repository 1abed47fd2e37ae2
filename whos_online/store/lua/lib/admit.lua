-- admitted(set, cap, trim, stale_before): whether a newcomer fits into the capped
-- set. Room is made only from guests already out of the window (scored before
-- stale_before, a little before its start), at most trim of them; while the set
-- is full of guests inside it the newcomer is refused, so a flood of new
-- addresses never pushes out the guests already counted.
local function admitted(set, cap, trim, stale_before)
  local excess = redis.call('ZCARD', set) - cap + 1
  if excess <= 0 then return true end
  local stale = redis.call('ZCOUNT', set, '-inf', string.format('(%.17g', stale_before))
  local n = math.min(excess, stale, trim)
  if n > 0 then redis.call('ZREMRANGEBYRANK', set, 0, n - 1) end
  return n == excess
end
