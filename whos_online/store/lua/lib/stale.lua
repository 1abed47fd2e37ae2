-- stale(set, live, left, bound, n): at most n of the oldest members of set
-- scored below bound (a score, as text) whom no socket sign at or after bound
-- keeps (see kept.lua); live and left are set itself for a set of guests. The
-- kept ones are passed over, not counted against n, so a call finds n stale
-- members if there are.
local function stale(set, live, left, bound, n)
  local skip, count = {}, 0
  if live ~= set then
    local found = kept(set, live, left, bound)
    skip, count = kept_all(found), kept_below(found, tonumber(bound))
  end
  local pks = redis.call('ZRANGE', set, '-inf', '(' .. bound, 'BYSCORE', 'LIMIT', 0, n + count)
  local found = {}
  for _, pk in ipairs(pks) do
    if #found == n then break end
    if not skip[pk] then found[#found + 1] = pk end
  end
  return found
end
-- drop(set, pks, cards): takes pks out of set, and out of cards unless it is set
-- itself, 1,000 a call (unpack's limit is a few thousand).
local function drop(set, pks, cards)
  for first = 1, #pks, 1000 do
    local last = math.min(first + 999, #pks)
    redis.call('ZREM', set, unpack(pks, first, last))
    if cards ~= set then redis.call('HDEL', cards, unpack(pks, first, last)) end
  end
end
