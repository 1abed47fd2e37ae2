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
-- kept(set, live, left, start): the members of set whom a socket sign at or
-- after start (a score, as text) keeps inside a window starting there though
-- their score is older. Redis joins set and live (ZINTER, in C) sorted by
-- score; this finds where start falls in it by bisection, so a read costs a
-- pass in C over the connected members and no loop over them in Lua. Returns
-- {joined = the join (pk, score, ...), before = how many of its pairs are
-- scored before start, ancient = pk -> score for those of them whose beat is
-- before start too (a dead process's, not swept yet: it keeps nobody), closed
-- = {pk, score} of those kept by a close alone, oldest score first}.
local function kept(set, live, left, start)
  local found = {joined = {}, before = 0, ancient = {}, closed = {}}
  if redis.call('EXISTS', live, left) == 0 then return found end
  local from = tonumber(start)
  for _, pk in ipairs(redis.call('ZRANGE', live, '-inf', '(' .. start, 'BYSCORE')) do
    local score = redis.call('ZSCORE', set, pk)
    if score and tonumber(score) < from then found.ancient[pk] = tonumber(score) end
  end
  local joined = redis.call('ZINTER', 2, set, live, 'WEIGHTS', 1, 0, 'WITHSCORES')
  local low, high = 0, #joined / 2
  while low < high do
    local middle = math.floor((low + high + 1) / 2)
    if tonumber(joined[2 * middle]) < from then low = middle else high = middle - 1 end
  end
  found.joined, found.before = joined, low
  local gone = redis.call('ZRANGE', left, start, '+inf', 'BYSCORE')
  local scores, beats = each('ZMSCORE', set, gone), each('ZMSCORE', live, gone)
  for i, pk in ipairs(gone) do
    local beating = beats[i] and tonumber(beats[i]) >= from
    if scores[i] and tonumber(scores[i]) < from and not beating then
      found.closed[#found.closed + 1] = {pk, tonumber(scores[i])}
    end
  end
  table.sort(found.closed, function(a, b) return a[2] < b[2] end)
  return found
end
-- kept_below(found, bound): how many of the members found keeps are scored
-- below bound (at most its start): all of them, or those seen before a day began.
local function kept_below(found, bound)
  local joined, low, high = found.joined, 0, found.before
  while low < high do
    local middle = math.floor((low + high + 1) / 2)
    if tonumber(joined[2 * middle]) < bound then low = middle else high = middle - 1 end
  end
  local count = low
  for _, score in pairs(found.ancient) do
    if score < bound then count = count - 1 end
  end
  for _, row in ipairs(found.closed) do
    if row[2] >= bound then break end
    count = count + 1
  end
  return count
end
-- newest_kept(found, n): the n newest {pk, score} of the members found keeps,
-- newest first (n < 0: all).
local function newest_kept(found, n)
  local joined, closed, rows = found.joined, found.closed, {}
  local i, j = found.before, #closed
  while (i > 0 or j > 0) and #rows ~= n do
    local score = i > 0 and tonumber(joined[2 * i]) or nil
    if score and (j == 0 or score >= closed[j][2]) then
      if not found.ancient[joined[2 * i - 1]] then rows[#rows + 1] = {joined[2 * i - 1], score} end
      i = i - 1
    else
      rows[#rows + 1], j = closed[j], j - 1
    end
  end
  return rows
end
-- kept_all(found): pk -> true for every member found keeps.
local function kept_all(found)
  local all = {}
  for i = 1, found.before do
    if not found.ancient[found.joined[2 * i - 1]] then all[found.joined[2 * i - 1]] = true end
  end
  for _, row in ipairs(found.closed) do all[row[1]] = true end
  return all
end
