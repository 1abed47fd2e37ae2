-- current_generation(key, now, ttl): when Redis's data began (see recovery.py), and
-- whether it begins here: a Redis that holds none lost its data (or never had any),
-- so the generation starts at now (in microseconds). The key lives at least ttl s
-- more, as long as what the caller writes, so it goes with the rest of an abandoned
-- prefix.
local function current_generation(key, now, ttl)
  local began = redis.call('GET', key)
  if began then
    if redis.call('TTL', key) < tonumber(ttl) then redis.call('EXPIRE', key, ttl) end
    return began, false
  end
  began = string.format('%.6f', tonumber(now))
  redis.call('SET', key, began, 'EX', ttl)
  return began, true
end
