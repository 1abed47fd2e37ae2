-- current_generation(key, now, ttl): when Redis's data began (see recovery.py), and
-- whether it begins here: a Redis that holds none lost its data (or never had any),
-- so the generation starts at now (in microseconds), kept ttl s.
local function current_generation(key, now, ttl)
  local began = redis.call('GET', key)
  if began then return began, false end
  began = string.format('%.6f', tonumber(now))
  redis.call('SET', key, began, 'EX', ttl)
  return began, true
end
-- keep_generation(key, ttl): the generation lives at least ttl s more, as long as what
-- the caller wrote, so it goes with the rest of an abandoned prefix. A record calls
-- it after its own writes: Redis refuses a script's writes out of memory only until
-- its first write, and this EXPIRE, never refused, would let the rest through.
local function keep_generation(key, ttl)
  if redis.call('TTL', key) < tonumber(ttl) then redis.call('EXPIRE', key, ttl) end
end
