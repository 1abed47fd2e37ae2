-- Records a visitor as seen now, in one call (one round trip, also on Cluster).
--
-- KEYS[1]   the sorted set the visitor goes into (users, hidden or guests); with
--           approximate guest counting (ARGV[15] '') not written: the counters are
--           all a guest goes into, so neither a cap nor a refusal
-- KEYS[2]   a member's other set (listed <-> hidden)
-- KEYS[3]   the cards, member pk -> card
-- KEYS[4]   the guests, for a member who was the guest ARGV[13] until logging in
-- KEYS[5]   the site's peak (a capped record on the site: a flood)
-- KEYS[6]   the rooms' registry, room -> last visit (a room's record)
-- KEYS[7]   the member's rooms, kind -> room (a member's room record)
-- KEYS[8]   the guests of the room of the same kind a guest left (their cookie
--           names it, ARGV[14]: Redis keeps no key per guest)
-- KEYS[9]   the index (lib/kept.lua) of KEYS[1]    KEYS[10]  the index of KEYS[2]
-- KEYS[11..] the counters: HyperLogLogs the visitor also goes into
-- A key the record does not use (KEYS[2], 3, 9 and 10 but for a member's record,
-- 4 without ARGV[13], 5 without ARGV[7] or in a room, 6 on the site, 7 but for a
-- member in a room, 8 without ARGV[14]) is KEYS[1] repeated.
-- ARGV[1]   now          ARGV[2]  the member (a pk or a guest id)
-- ARGV[3]   the TTL of what is written for the visitor
-- ARGV[4]   the window (seconds)
-- ARGV[5]   the notices channel
-- ARGV[6]   with counters: a visitor scored at or after it is in every counter already
-- ARGV[7]   the guest cap ('': none)
-- ARGV[8]   how many stale guests or rooms over the cap one write may drop
-- ARGV[9]   the room ('' for the site)   ARGV[10]  the rooms' cap (a room's record)
-- ARGV[11]  a member's card ('' for a guest)
-- ARGV[12]  '1' keeps a card already stored, else ''
-- ARGV[13]  the guest a member was ('': none)   ARGV[14]  the room a guest left ('': none)
-- ARGV[15]  '1' if KEYS[1] is written, '' (approximate guests) if not
-- ARGV[16..] each counter's TTL
-- Returns {the score before (false if none or not kept), 1 if the newcomer was
-- refused (nothing written) else 0, the room of the same kind the member left
-- (false if none), the rooms dropped from the registry over its cap}, whose keys
-- the caller then handles (leave_room.lua, drop_rooms.lua).
--
-- Each key written gets its TTL, so an abandoned namespace disappears. A write
-- that changes what the namespace shows (any member's; a guest's unless they
-- were inside the window already) publishes the room.
--@include lib/flood.lua
--@include lib/announce.lua
local now, member, ttl, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local cap, trim, room, card, guest, left_room = ARGV[7], tonumber(ARGV[8]), ARGV[9], ARGV[11],
                                                ARGV[13], ARGV[14]
local into = KEYS[1]
local window = tonumber(ARGV[4])
local window_ttl, window_start = math.ceil(window), tonumber(now) - window
local before = false
if ARGV[15] == '1' then
  before = redis.call('ZSCORE', into, member)
  local excess = cap ~= '' and not before and redis.call('ZCARD', into) - tonumber(cap) + 1 or 0
  if excess > 0 then
    -- Room is made only from guests out of the window (at most trim of them): while
    -- the set is full of guests inside it, a newcomer is refused, so a flood of new
    -- addresses never pushes out the guests already counted.
    local stale = redis.call('ZCOUNT', into, '-inf', string.format('(%.17g', window_start))
    local n = math.min(excess, stale, trim)
    if n > 0 then redis.call('ZREMRANGEBYRANK', into, 0, n - 1) end
    if n < excess then
      if room == '' then mark_flood(KEYS[5], now, window_ttl, window_start) end
      return {false, 1, false, {}}
    end
  end
  -- GT: a server whose clock lags never moves a score backwards.
  redis.call('ZADD', into, 'GT', now, member)
  redis.call('EXPIRE', into, ttl)
end
if card ~= '' then
  redis.call('ZREM', KEYS[2], member)
  -- A member in their set's index (lib/kept.lua) keeps the set's score there (XX: only
  -- if in it), and takes their entry, with its TTL, to the other index on hiding or not.
  local moved = redis.call('ZSCORE', KEYS[10], member) and redis.call('PTTL', KEYS[10])
  if moved then
    redis.call('ZREM', KEYS[10], member)
    redis.call('ZADD', KEYS[9], redis.call('ZSCORE', into, member), member)
    if moved > 0 then redis.call('PEXPIRE', KEYS[9], moved) end
  else
    redis.call('ZADD', KEYS[9], 'XX', 'GT', now, member)
  end
  redis.call(ARGV[12] == '1' and 'HSETNX' or 'HSET', KEYS[3], member, card)
  redis.call('EXPIRE', KEYS[3], ttl)
end
if card ~= '' or not (before and tonumber(before) >= window_start) then
  announce(room, channel)
end
local left, dropped = false, {}
if room ~= '' then
  if card ~= '' then
    -- A member is in one room of a kind (its name up to the first ':') at a time.
    local kind = string.match(room, '^[^:]*')
    local was_in = redis.call('HGET', KEYS[7], kind)
    redis.call('HSET', KEYS[7], kind, room)
    redis.call('EXPIRE', KEYS[7], ttl)
    if was_in ~= room then left = was_in end
  end
  -- The registry, by last visit: over the cap, the least recently visited (at most
  -- trim of them) leave it.
  redis.call('ZADD', KEYS[6], now, room)
  redis.call('EXPIRE', KEYS[6], window_ttl)
  local over = redis.call('ZCARD', KEYS[6]) - tonumber(ARGV[10])
  if over > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[6], math.min(over, trim))
    for i = 1, #popped, 2 do dropped[#dropped + 1] = popped[i] end
  end
end
if guest ~= '' then redis.call('ZREM', KEYS[4], guest) end
-- A guest who left a room (rooms of a kind share one window) is out of it at once.
if left_room ~= '' then
  local score = redis.call('ZSCORE', KEYS[8], member)
  redis.call('ZREM', KEYS[8], member)
  if score and tonumber(score) >= window_start then announce(left_room, channel) end
end
if #KEYS > 10 and not (before and tonumber(before) >= tonumber(ARGV[6])) then
  -- A counter's TTL runs from when a visitor changed it (its first visitor made it).
  for i = 11, #KEYS do
    if redis.call('PFADD', KEYS[i], member) == 1 then redis.call('EXPIRE', KEYS[i], ARGV[5 + i]) end
  end
end
return {before, 0, left, dropped}
