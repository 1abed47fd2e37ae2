-- stale(set, live, left, bound, from, n): of the members of set scored below
-- bound (as text), the n from rank from on (oldest first), those no socket sign at
-- or after bound keeps (see kept.lua; live and left are set itself for guests).
-- Ranks, not scores: reading on past members a socket keeps costs O(log n). Returns
-- them, how many it read, and whether members below bound remain past them.
local function stale(set, live, left, bound, from, n)
  local below, pks = redis.call('ZCOUNT', set, '-inf', '(' .. bound), {}
  if from < below and n > 0 then
    pks = redis.call('ZRANGE', set, from, math.min(from + n, below) - 1)
  end
  local beats, closes = {}, {}
  if live ~= set then beats, closes = each('ZMSCORE', live, pks), each('ZMSCORE', left, pks) end
  local found, at = {}, tonumber(bound)
  for i, pk in ipairs(pks) do
    local signed = (beats[i] and tonumber(beats[i]) >= at) or (closes[i] and tonumber(closes[i]) >= at)
    if not signed then found[#found + 1] = pk end
  end
  return found, #pks, from + #pks < below
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
