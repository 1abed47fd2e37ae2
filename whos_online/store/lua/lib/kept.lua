-- A member is inside a window while their score (the last page view or connect)
-- or their newest socket sign (when their connections are alive until, in the
-- live set; a close, in the left set) is in it. Heartbeats never move scores, so
-- they never reorder a list.
--
-- So that no read walks the connected members, each member set has an index (kept
-- users, kept hidden): its members with a socket sign, scored as in the set. The
-- members a socket keeps inside a window from start are the index's entries scored
-- before it, but those whose every sign is before it too (aged), which a read
-- passes over and prune's count drops.
--
-- each(command, key, names): command (HMGET, ZMSCORE) on key for names, one
-- call per 1,000 (unpack's limit is a few thousand), not one per name.
local function each(command, key, names)
  local found = {}
  for first = 1, #names, 1000 do
    local values = redis.call(command, key, unpack(names, first, math.min(first + 999, #names)))
    for _, value in ipairs(values) do found[#found + 1] = value end
  end
  return found
end
-- expire_signs(ttl, live, left, kept_users, kept_hidden): one TTL for the four,
-- so that no index outlives the signs that put its members in.
local function expire_signs(ttl, ...)
  for _, key in ipairs({...}) do redis.call('EXPIRE', key, ttl) end
end
-- aged(live, left, kept_users, kept_hidden, start, drop): the members whose every
-- socket sign is before start (a score, as text); with drop (prune's count; a read
-- writes nothing) they go out of the indexes and, their close with them, out of
-- left. Returns those of them still there (all without drop, none with it): a
-- list the counts below pass over.
local function aged(live, left, kept_users, kept_hidden, start, drop)
  local found, seen, from = {}, {}, tonumber(start)
  for _, sets in ipairs({{live, left}, {left, live}}) do
    local pks = redis.call('ZRANGE', sets[1], '-inf', '(' .. start, 'BYSCORE')
    local other = each('ZMSCORE', sets[2], pks)
    for i, pk in ipairs(pks) do
      if not seen[pk] and not (other[i] and tonumber(other[i]) >= from) then
        seen[pk], found[#found + 1] = true, pk
      end
    end
  end
  if not drop then return found end
  for first = 1, #found, 1000 do
    for _, key in ipairs({kept_users, kept_hidden, left}) do
      redis.call('ZREM', key, unpack(found, first, math.min(first + 999, #found)))
    end
  end
  return {}
end
-- kept_below(index, still, bound): how many members the index keeps inside are
-- scored below bound (as text; at most the window's start): all of them, or
-- those seen before a day began. still: aged members left in the index.
local function kept_below(index, still, bound)
  local count, from = redis.call('ZCOUNT', index, '-inf', '(' .. bound), tonumber(bound)
  for _, score in ipairs(each('ZMSCORE', index, still)) do
    if score and tonumber(score) < from then count = count - 1 end
  end
  return count
end
-- newest_kept(index, still, start, n): the n newest {pk, score} the index keeps
-- inside a window from start, newest first (n < 0: all), passing over still.
local function newest_kept(index, still, start, n)
  local rows, skip = {}, {}
  if n == 0 then return rows end
  for _, pk in ipairs(still) do skip[pk] = true end
  local range = {'ZRANGE', index, '(' .. start, '-inf', 'BYSCORE', 'REV', 'WITHSCORES'}
  if n > 0 then
    for _, word in ipairs({'LIMIT', 0, n + #still}) do range[#range + 1] = word end
  end
  local found = redis.call(unpack(range))
  for i = 1, #found, 2 do
    if not skip[found[i]] and (n < 0 or #rows < n) then
      rows[#rows + 1] = {found[i], found[i + 1]}
    end
  end
  return rows
end
