-- mark_flood(peak, now, window_ttl, window_start): the site's guests are a flood
-- (a newcomer was refused): the peak it raised since the window's start goes back
-- to the one before (see count_and_raise_peak.lua), and no peak is taken for a
-- window (flood_until in the peak hash).
local function mark_flood(peak, now, window_ttl, window_start)
  local at = tonumber(redis.call('HGET', peak, 'at') or '0')
  if at >= window_start then
    local kept = redis.call('HMGET', peak, 'before', 'before_at')
    if kept[1] then
      redis.call('HSET', peak, 'count', kept[1], 'at', kept[2])
    else
      redis.call('HDEL', peak, 'count', 'at')
    end
  end
  redis.call('HSET', peak, 'flood_until', tonumber(now) + window_ttl)
  -- The mark outlives flood_until, also when a count has not renewed it since an
  -- earlier flood's shorter TTL.
  if redis.call('TTL', peak) < window_ttl then redis.call('EXPIRE', peak, window_ttl) end
end
