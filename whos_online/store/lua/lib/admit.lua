-- admitted(set, cap, trim, window_start): whether a newcomer fits into the capped
-- set. Room is made only from guests already out of the window (scored before
-- window_start), at most trim of them; while the set is full of guests inside it
-- the newcomer is refused, so a flood of new addresses never pushes out the
-- guests already counted.
local function admitted(set, cap, trim, window_start)
  local excess = redis.call('ZCARD', set) - cap + 1
  if excess <= 0 then return true end
  local stale = redis.call('ZCOUNT', set, '-inf', string.format('(%.17g', window_start))
  local n = math.min(excess, stale, trim)
  if n > 0 then redis.call('ZREMRANGEBYRANK', set, 0, n - 1) end
  return n == excess
end
