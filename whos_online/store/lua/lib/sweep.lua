-- sweep(live, left, now): the connections of dead processes in a namespace,
-- members of its live set alive until before now, move to its left set at that
-- time. Returns whether any did. The caller passes KEYS only.
local function sweep(live, left, now)
  local stale = redis.call('ZRANGE', live, '-inf', '(' .. now, 'BYSCORE', 'WITHSCORES')
  for j = 1, #stale, 2 do redis.call('ZADD', left, 'GT', stale[j + 1], stale[j]) end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', live, '-inf', '(' .. now) end
  return #stale > 0
end
