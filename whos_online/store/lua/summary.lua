-- What the block shows, in one call (so one round trip, also on Redis Cluster,
-- whose pipelines cannot carry a script).
--
-- KEYS[1]     users      KEYS[2]  hidden     KEYS[3]  guests
-- KEYS[4]     peak       KEYS[5]  cards
-- KEYS[6..]   with approximate guest counting (ARGV[6] = n > 0): the window's n - 1
--             guest HyperLogLogs, oldest first, then where their union is kept
--             (KEYS[5 + n], kept ARGV[8] ms; see union_count)
-- then        with the day's count (ARGV[7] not ''): the hour HyperLogLogs of the
--             past 24 hours, oldest first, then where their union is kept (ARGV[9] ms)
-- KEYS[#-4]   live: pk -> newest heartbeat      KEYS[#-3]  left: pk -> last closed
-- KEYS[#-2]   kept users      KEYS[#-1]  kept hidden: the indexes of lib/kept.lua
-- KEYS[#]     the generation: when Redis's data began (see recovery.py)
-- ARGV[1]     the window's start
-- ARGV[2]     now
-- ARGV[3]     '1' to read the site's peak, '0' for a room (no peak)
-- ARGV[4]     how many listed members to return (-1: all)
-- ARGV[5]     '1' to list the hidden members too (a staff view), else '0'
-- ARGV[6]     n: how many KEYS[6..] are the window's buckets (0: exact guests)
-- ARGV[7]     the start of the past 24 hours ('': no day count)
-- ARGV[8]     the window union's TTL (ms)
-- ARGV[9]     the hours union's TTL (ms)
-- ARGV[10]    now minus the heartbeat timeout
-- ARGV[11]    the guest cap (0: none)
-- Returns {listed, hidden (each one JSON text; see listing), users, hidden count,
-- guests, peak count, peak time (the kept peak, or the count now if it beats it:
-- see peak_with in lib/counts.lua; false, false if none), day members, day guests
-- (false, false without a day count), the oldest sign (see oldest), the generation
-- (false if Redis holds none: its data was lost)}. It writes no peak: prune does
-- (count_and_raise_peak.lua).
--
-- A member is inside the window while their score or a socket sign of them is
-- (see lib/kept.lua). Whether each listed member is online or idle is decided
-- in Python (whos_online/store/status.py) from the signs listing returns.
--@include lib/counts.lua
--@include lib/kept.lua
local live, left, generation = KEYS[#KEYS - 4], KEYS[#KEYS - 3], KEYS[#KEYS]
local kept_users, kept_hidden = KEYS[#KEYS - 2], KEYS[#KEYS - 1]
local limit = tonumber(ARGV[4])
local sockets = redis.call('EXISTS', live, left) > 0
local still = aged(live, left, kept_users, kept_hidden, ARGV[1], false)
-- The members of key to list, {pk, score} pairs, newest score first: those
-- inside the window by their score, then those its index keeps inside (see
-- lib/kept.lua); at most ARGV[4] (-1: all).
local function newest(key, index)
  local rows = {}
  local inside = redis.call('ZRANGE', key, '+inf', ARGV[1], 'BYSCORE', 'REV', 'LIMIT', 0, ARGV[4],
                            'WITHSCORES')
  for i = 1, #inside, 2 do rows[#rows + 1] = {inside[i], inside[i + 1]} end
  local more = limit < 0 and -1 or limit - #rows
  for _, row in ipairs(newest_kept(index, still, live, ARGV[1], more)) do rows[#rows + 1] = row end
  return rows
end
-- The members of rows as one JSON text, [[score, pk, card, beat, left], ...]:
-- the card as stored, the newest heartbeat and the last close (each false if
-- none). One value for the client to parse (in C), not five per member (in
-- redis-py's Python reply parser).
local function listing(rows)
  local names, found = {}, {}
  for i, row in ipairs(rows) do names[i] = row[1] end
  local cards = each('HMGET', KEYS[5], names)
  local beats, lefts = {}, {}
  if sockets then beats, lefts = each('ZMSCORE', live, names), each('ZMSCORE', left, names) end
  for i, row in ipairs(rows) do
    found[i] = {row[2], row[1], cards[i], beats[i] or false, lefts[i] or false}
  end
  return cjson.encode(found)
end
local result = {listing(newest(KEYS[1], kept_users))}
if ARGV[5] == '1' then
  table.insert(result, listing(newest(KEYS[2], kept_hidden)))
else
  table.insert(result, listing({}))
end
-- The union of the HyperLogLogs KEYS[first..last], oldest first. Only the
-- newest still changes (a lagging server's late write to an older one waits
-- for the next union), so the first count after it began merges the others
-- into KEYS[last + 1], kept ttl ms, and each count merges two, not eleven or
-- 24. A replica or a full Redis cannot write: it counts them all.
local function union_count(first, last, ttl)
  local past = KEYS[last + 1]
  if first == last then return redis.call('PFCOUNT', KEYS[last]) end
  if redis.call('EXISTS', past) == 0 then
    if redis.pcall('PFMERGE', past, unpack(KEYS, first, last - 1)).err then
      return redis.call('PFCOUNT', unpack(KEYS, first, last))
    end
    redis.call('PEXPIRE', past, ttl)
  end
  return redis.call('PFCOUNT', past, KEYS[last])
end
local buckets = tonumber(ARGV[6])
local function window_guests() return union_count(6, 4 + buckets, ARGV[8]) end
local users, hidden, guests = count_inside(KEYS, ARGV[1], buckets > 0 and window_guests or nil,
                                           kept_below(kept_users, still, ARGV[1]),
                                           kept_below(kept_hidden, still, ARGV[1]))
local peak_count, peak_at = false, false
if ARGV[3] == '1' then
  peak_count, peak_at = peak_with(KEYS, ARGV[1], ARGV[2], users + hidden + guests, guests,
                                  tonumber(ARGV[11]), buckets > 0)
end
for _, value in ipairs({users, hidden, guests, peak_count, peak_at}) do
  table.insert(result, value)
end
if ARGV[7] == '' then
  table.insert(result, false)
  table.insert(result, false)
else
  -- Members kept inside the window by a socket were seen today, whatever their score.
  local earlier = kept_below(kept_users, still, ARGV[7]) + kept_below(kept_hidden, still, ARGV[7])
  table.insert(result, redis.call('ZCOUNT', KEYS[1], ARGV[7], '+inf')
                       + redis.call('ZCOUNT', KEYS[2], ARGV[7], '+inf') + earlier)
  table.insert(result, union_count(6 + buckets, #KEYS - 6, ARGV[9]))
end
-- When the counts next change by time alone: the oldest score inside the window
-- over the three sets, passing over (20 at most) members still beating, or the
-- oldest close or stopped beat keeping someone inside it (if anything too early:
-- a re-read then finds nothing new); as text (Lua would truncate it), false if
-- nobody is there.
local function oldest(key)
  local rows = redis.call('ZRANGE', key, ARGV[1], '+inf', 'BYSCORE', 'LIMIT', 0, 20, 'WITHSCORES')
  for i = 1, #rows, 2 do
    local beat = redis.call('ZSCORE', live, rows[i])
    if not (beat and tonumber(beat) >= tonumber(ARGV[10])) then return tonumber(rows[i + 1]) end
  end
  if #rows > 0 then return tonumber(rows[#rows]) end
end
local first = nil
for i = 1, 3 do
  local score = oldest(KEYS[i])
  if score and (not first or score < first) then first = score end
end
for _, range in ipairs({{left, '+inf'}, {live, '(' .. ARGV[10]}}) do
  local sign = redis.call('ZRANGE', range[1], ARGV[1], range[2], 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  if sign[2] and (not first or tonumber(sign[2]) < first) then first = tonumber(sign[2]) end
end
table.insert(result, first and string.format('%.17g', first) or false)
table.insert(result, redis.call('GET', generation))
return result
