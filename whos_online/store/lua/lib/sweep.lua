-- sweep(live, left, cutoff): the connections of dead processes in a namespace,
-- members of its live set whose newest heartbeat is before cutoff, move to its
-- left set at that beat. Returns whether any did. The caller passes KEYS only.
local function sweep(live, left, cutoff)
  local stale = redis.call('ZRANGE', live, '-inf', '(' .. cutoff, 'BYSCORE', 'WITHSCORES')
  for j = 1, #stale, 2 do redis.call('ZADD', left, 'GT', stale[j + 1], stale[j]) end
  if #stale > 0 then redis.call('ZREMRANGEBYSCORE', live, '-inf', '(' .. cutoff) end
  return #stale > 0
end
