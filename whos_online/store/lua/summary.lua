-- What the block shows, in one call (one round trip, also on Redis Cluster). It
-- reads only: the caller runs it read-only (see scripts.Script.read).
--
-- KEYS[1]     users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]     peak       KEYS[5]  cards
-- KEYS[6]     live: pk -> alive until      KEYS[7]  left: pk -> last closed
-- KEYS[8]     kept users      KEYS[9]  kept hidden: the indexes of lib/kept.lua
-- KEYS[10..]  with approximate guest counting (ARGV[6] = n > 0): the window's n
--             guest HyperLogLogs; then, with the day's count (ARGV[7] not ''), the
--             guests' hour HyperLogLogs of the past 24 hours, oldest first, and the
--             union of all but the last (prune makes it), then the members'
-- ARGV[1]     the window's start
-- ARGV[2]     now
-- ARGV[3]     '1' to read the site's peak, '0' for a room (no peak)
-- ARGV[4]     how many listed members to return (-1: all)
-- ARGV[5]     '1' to list the hidden members too (a staff view), else '0'
-- ARGV[6]     n: how many KEYS[10..] are the window's buckets (0: exact guests)
-- ARGV[7]     the start of the past 24 hours ('': no day count)
-- ARGV[8]     the guest cap (0: none)
-- Returns {listed, hidden (each one JSON text; see listing), users, hidden count,
-- guests, peak count, peak time (see peak_with in lib/counts.lua), day members,
-- day guests (false, false without a day count), the oldest sign (see oldest)}.
-- With neither a live nor a left set, nobody has a socket sign (see lib/kept.lua)
-- and the indexes are passed over.
--@include lib/counts.lua
--@include lib/kept.lua
local live, left, kept_users, kept_hidden = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local start, limit, buckets = ARGV[1], tonumber(ARGV[4]), tonumber(ARGV[6])
local sockets = redis.call('EXISTS', live, left) > 0
local still = sockets and aged(live, left, kept_users, kept_hidden, start, false) or {}
-- How many members the index keeps inside, scored below bound (see kept_below).
local function kept(index, bound) return sockets and kept_below(index, still, bound) or 0 end
local counted = inside(KEYS, start, {unpack(KEYS, 10, 9 + buckets)})
-- The oldest score inside the window of a set whose members inside were all listed.
local oldest_listed = {}
-- The members of key to list as one JSON text, [[score, pk, card, beat, left], ...],
-- newest score first: the n inside the window by their score, then those its index
-- keeps inside, at most ARGV[4] (-1: all); beat and left are false if none. One
-- value for the client to parse (in C), not five per member (in Python).
local function listing(key, index, n)
  local rows, names, take = {}, {}, limit < 0 and n or math.min(n, limit)
  if take > 0 then
    local found = redis.call('ZRANGE', key, 0, take - 1, 'REV', 'WITHSCORES')
    for i = 1, #found, 2 do
      rows[#rows + 1], names[#names + 1] = {found[i + 1], found[i]}, found[i]
    end
    if take == n then oldest_listed[key] = tonumber(found[#found]) end
  end
  if sockets then
    local more = limit < 0 and -1 or limit - #rows
    for _, row in ipairs(newest_kept(index, still, start, more)) do
      rows[#rows + 1], names[#names + 1] = {row[2], row[1]}, row[1]
    end
  end
  if #rows == 0 then return '[]' end
  local cards = each('HMGET', KEYS[5], names)
  local beats, lefts = {}, {}
  if sockets then beats, lefts = each('ZMSCORE', live, names), each('ZMSCORE', left, names) end
  for i, row in ipairs(rows) do
    row[3], row[4], row[5] = cards[i], beats[i] or false, lefts[i] or false
  end
  return cjson.encode(rows)
end
local result = {listing(KEYS[1], kept_users, counted[1]),
                ARGV[5] == '1' and listing(KEYS[2], kept_hidden, counted[2]) or '[]'}
local users, hidden = counted[1] + kept(kept_users, start), counted[2] + kept(kept_hidden, start)
local guests = counted[3]
local peak_count, peak_at = false, false
if ARGV[3] == '1' then
  peak_count, peak_at = peak_with(KEYS, counted, ARGV[2], users + hidden + guests, guests,
                                  tonumber(ARGV[8]), buckets > 0)
end
for _, value in ipairs({users, hidden, guests, peak_count, peak_at}) do
  result[#result + 1] = value
end
if ARGV[7] == '' then
  result[#result + 1], result[#result + 2] = false, false
else
  -- The union of the hours from KEYS[first] to the one before KEYS[union], with
  -- the past ones' union if prune made it this hour (two to count, not 24).
  local function day_count(first, union)
    if redis.call('EXISTS', KEYS[union]) == 1 then
      return redis.call('PFCOUNT', KEYS[union], KEYS[union - 1])
    end
    return redis.call('PFCOUNT', unpack(KEYS, first, union - 1))
  end
  local per = (#KEYS - 9 - buckets) / 2
  -- The members recorded in those hours, and those a socket kept inside the window
  -- since (seen today, whatever their score).
  result[#result + 1] = day_count(10 + buckets + per, #KEYS)
                        + kept(kept_users, ARGV[7]) + kept(kept_hidden, ARGV[7])
  result[#result + 1] = day_count(10 + buckets, 9 + buckets + per)
end
-- When the counts next change by time alone: the oldest score inside the window
-- (passing over at most 20 members still beating), or the oldest sign keeping
-- someone inside it (too early at worst: a re-read finds nothing new); as text.
local function oldest(key, n)
  if not sockets then
    return oldest_listed[key] or tonumber(redis.call('ZRANGE', key, -n, -n, 'WITHSCORES')[2])
  end
  local rows = redis.call('ZRANGE', key, start, '+inf', 'BYSCORE', 'LIMIT', 0, 20, 'WITHSCORES')
  for i = 1, #rows, 2 do
    local beat = redis.call('ZSCORE', live, rows[i])
    if not (beat and tonumber(beat) >= tonumber(ARGV[2])) then return tonumber(rows[i + 1]) end
  end
  if #rows > 0 then return tonumber(rows[#rows]) end
end
local first = nil
for i, n in ipairs({counted[1], counted[2], buckets > 0 and 0 or counted[3]}) do
  local score = n > 0 and oldest(KEYS[i], n)
  if score and (not first or score < first) then first = score end
end
if sockets then
  for _, range in ipairs({{left, '+inf'}, {live, '(' .. ARGV[2]}}) do
    local sign = redis.call('ZRANGE', range[1], start, range[2], 'BYSCORE', 'LIMIT', 0, 1,
                            'WITHSCORES')
    if sign[2] and (not first or tonumber(sign[2]) < first) then first = tonumber(sign[2]) end
  end
end
result[#result + 1] = first and string.format('%.17g', first) or false
return result
