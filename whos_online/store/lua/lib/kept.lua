-- A WebSocket is a sign of a member as a page view is: a member is inside a
-- window while their score (the last page view or connect) or their newest
-- socket sign (a heartbeat in the live set, a close in the left set) is in it.
-- Heartbeats never move scores, so they never reorder a list: the members a
-- socket alone keeps inside are listed after the others, by score.
--
-- So that no read walks the connected members, each member set has an index
-- (a namespace's kept users and kept hidden): its members who have a socket
-- sign, scored as in the set. heartbeat.lua and disconnect.lua put them in,
-- record.lua moves their score with the set's, and whatever takes a member out
-- of a set (forget, leave, prune) takes them out of its index. The members a
-- socket keeps inside a window starting at start are then the index's entries
-- scored before start, but those whose every sign is before start (aged): found
-- from the live and left sets below start, which a read passes over and prune's
-- count drops (as a close drops the closes before the window), so a read costs
-- O(log n + the list) plus the signs that aged since the last prune.
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
-- out_of(call, keys, pks): ZREM pks from each of keys with call (redis.call, or
-- redis.pcall for a read that may run on a replica); false if Redis refused.
local function out_of(call, keys, pks)
  for first = 1, #pks, 1000 do
    for _, key in ipairs(keys) do
      local done = call('ZREM', key, unpack(pks, first, math.min(first + 999, #pks)))
      if type(done) == 'table' and done.err then return false end
    end
  end
  return true
end
-- expire_signs(ttl, live, left, kept_users, kept_hidden): one TTL for the four,
-- so that no index outlives the signs that put its members in.
local function expire_signs(ttl, ...)
  for _, key in ipairs({...}) do redis.call('EXPIRE', key, ttl) end
end
-- aged(live, left, kept_users, kept_hidden, start, drop): the members whose every
-- socket sign is before start (a score, as text); with drop (prune's count; a read
-- writes nothing) they go out of the indexes and, their close with them, out of
-- left. Returns those of them still there (all without drop; none unless Redis
-- refused the write, as a replica does): a list the counts below pass over.
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
  if drop and out_of(redis.pcall, {kept_users, kept_hidden, left}, found) then return {} end
  return found
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
-- in_tie_order(index, live, start, rows, n, skip): rows (newest first, n at
-- most and one more) with all of the n-th row's score but those in skip (pk ->
-- true), those still beating
-- first among each score's, then by pk (as ZRANGE … REV orders them), as the
-- join of the set with the live set listed them. Only for rows with ties.
local function in_tie_order(index, live, start, rows, n, skip)
  if n > 0 and rows[n + 1] and rows[n + 1][2] == rows[n][2] then
    local seen, last = {}, rows[n][2]
    for _, row in ipairs(rows) do seen[row[1]] = true end
    for _, pk in ipairs(redis.call('ZRANGE', index, last, last, 'BYSCORE')) do
      if not (seen[pk] or skip[pk]) then rows[#rows + 1] = {pk, last} end
    end
  end
  local names, from = {}, tonumber(start)
  for i, row in ipairs(rows) do names[i] = row[1] end
  for i, beat in ipairs(each('ZMSCORE', live, names)) do
    rows[i][3], rows[i][4] = tonumber(rows[i][2]), beat and tonumber(beat) >= from
  end
  table.sort(rows, function(a, b)
    if a[3] ~= b[3] then return a[3] > b[3] end
    if a[4] ~= b[4] then return a[4] end
    return a[1] > b[1]
  end)
  return rows
end
-- newest_kept(index, still, live, start, n): the n newest {pk, score} the index
-- keeps inside a window from start, newest first (n < 0: all). Of one score
-- (a batch, a frozen clock), those still beating come first, then by pk.
local function newest_kept(index, still, live, start, n)
  local rows, skip = {}, {}
  if n == 0 then return rows end
  for _, pk in ipairs(still) do skip[pk] = true end
  local range = {'ZRANGE', index, '(' .. start, '-inf', 'BYSCORE', 'REV', 'WITHSCORES'}
  if n > 0 then  -- and one more, to see whether the last score's ties go on
    for _, word in ipairs({'LIMIT', 0, n + #still + 1}) do range[#range + 1] = word end
  end
  local found, ties = redis.call(unpack(range)), false
  for i = 1, #found, 2 do
    ties = ties or found[i + 1] == found[i - 1]
    if not skip[found[i]] then rows[#rows + 1] = {found[i], found[i + 1]} end
  end
  if ties then rows = in_tie_order(index, live, start, rows, n, skip) end
  if n > 0 then
    for i = #rows, n + 1, -1 do rows[i] = nil end
  end
  return rows
end
