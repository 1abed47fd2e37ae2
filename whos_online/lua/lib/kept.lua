-- A WebSocket is a sign of a member as a page view is: a member is inside a
-- window while their score (the last page view or connect) or their newest
-- socket sign (a heartbeat in the live set, a close in the left set) is in it.
-- Heartbeats never move scores, so they never reorder a list: the members a
-- socket alone keeps inside are listed after the others, by score.
--
-- each(command, key, names): command (HMGET or ZMSCORE) on key for names, one
-- call per 1,000 (unpack's limit is a few thousand), not one per name.
local function each(command, key, names)
  local found = {}
  for first = 1, #names, 1000 do
    local values = redis.call(command, key, unpack(names, first, math.min(first + 999, #names)))
    for _, value in ipairs(values) do found[#found + 1] = value end
  end
  return found
end
-- socket_signs(live, left, since): pk -> their newest socket sign at or after
-- since (a number), and whether any is still beating at or after beat_cutoff
-- (pk -> true); both empty where nobody has a socket (a site without Channels).
local function socket_signs(live, left, since, beat_cutoff)
  local signs, beating = {}, {}
  if redis.call('EXISTS', live, left) == 0 then return signs, beating end
  for _, key in ipairs({left, live}) do
    local rows = redis.call('ZRANGE', key, since, '+inf', 'BYSCORE', 'WITHSCORES')
    for i = 1, #rows, 2 do
      local at = tonumber(rows[i + 1])
      signs[rows[i]] = math.max(signs[rows[i]] or at, at)
      if key == live and at >= beat_cutoff then beating[rows[i]] = true end
    end
  end
  return signs, beating
end
-- kept(set, signs, start): the members of set that signs keep inside a window
-- starting at start though their score is older: {pk, score} pairs, newest
-- score first.
local function kept(set, signs, start)
  local names = {}
  for pk in pairs(signs) do names[#names + 1] = pk end
  local rows = {}
  for i, score in ipairs(each('ZMSCORE', set, names)) do
    if score and tonumber(score) < start then rows[#rows + 1] = {names[i], score} end
  end
  table.sort(rows, function(a, b) return tonumber(a[2]) > tonumber(b[2]) end)
  return rows
end
