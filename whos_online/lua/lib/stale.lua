-- stale(set, live, left, kept, bound, n): at most n of the oldest members of
-- set scored below bound (a score, as text) whom no socket sign at or after
-- bound keeps (see kept.lua; kept: the set's index); live, left and kept are
-- set itself for a set of guests. The kept ones are passed over, not counted
-- against n, so a call finds n stale members if there are: it reads the set
-- from its oldest, n plus as many as the index may keep at first, and asks live
-- and left about each.
local function stale(set, live, left, kept, bound, n)
  local found, from, offset = {}, tonumber(bound), 0
  local size = n
  if kept ~= set then size = n + redis.call('ZCOUNT', kept, '-inf', '(' .. bound) end
  while #found < n do
    local pks = redis.call('ZRANGE', set, '-inf', '(' .. bound, 'BYSCORE', 'LIMIT', offset, size)
    local beats, closes = {}, {}
    if live ~= set then beats, closes = each('ZMSCORE', live, pks), each('ZMSCORE', left, pks) end
    for i, pk in ipairs(pks) do
      local signed = (beats[i] and tonumber(beats[i]) >= from)
                     or (closes[i] and tonumber(closes[i]) >= from)
      if not signed and #found < n then found[#found + 1] = pk end
    end
    if #pks < size then break end
    offset, size = offset + size, n
  end
  return found
end
-- drop(set, pks, cards, kept): takes pks out of set, and out of cards and kept
-- unless they are set itself, 1,000 a call (unpack's limit is a few thousand).
local function drop(set, pks, cards, kept)
  for first = 1, #pks, 1000 do
    local last = math.min(first + 999, #pks)
    redis.call('ZREM', set, unpack(pks, first, last))
    if cards ~= set then redis.call('HDEL', cards, unpack(pks, first, last)) end
    if kept ~= set then redis.call('ZREM', kept, unpack(pks, first, last)) end
  end
end
