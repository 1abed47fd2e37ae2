-- stale(set, live, left, bound, n): at most n of the oldest members of set
-- scored below bound that no socket sign at or after bound keeps (see kept.lua);
-- live and left are set itself for a set of guests. The kept ones are passed
-- over, not counted against n, so a call finds n stale members if there are.
local function stale(set, live, left, bound, n)
  local signs = {}
  if live ~= set then signs = socket_signs(live, left, bound, math.huge) end
  local skip = #kept(set, signs, tonumber(bound))
  local rows = redis.call('ZRANGE', set, '-inf', '(' .. bound, 'BYSCORE', 'LIMIT', 0, n + skip)
  local found = {}
  for _, pk in ipairs(rows) do
    if #found == n then break end
    if not signs[pk] then found[#found + 1] = pk end
  end
  return found
end
