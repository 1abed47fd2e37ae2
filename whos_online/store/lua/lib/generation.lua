-- current_generation(key, now): when Redis's data began (see recovery.py), and whether it
-- begins here: a Redis that holds none lost its data (or never had any), so the
-- generation starts at now.
local function current_generation(key, now)
  local began = redis.call('GET', key)
  if began then return began, false end
  began = string.format('%.6f', tonumber(now))
  redis.call('SET', key, began)
  return began, true
end
