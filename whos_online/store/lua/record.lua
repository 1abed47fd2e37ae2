-- Records a visitor as seen now, in one call (one round trip, also on Cluster).
--
-- KEYS[1]    into: the sorted set the visitor goes into (users, hidden or guests)
-- KEYS[2]    drop_from: the member set they are no longer in (listed <-> hidden;
--            KEYS[1] when none)
-- KEYS[3]    rooms: the rooms' registry (room -> last visit)
-- KEYS[4]    cards: member pk -> card
-- KEYS[5]    guests: the namespace's guests
-- KEYS[6]    peak: the site's peak hash
-- KEYS[7]    changed: the namespace's change mark
-- KEYS[8]    member_rooms: the member's rooms, kind -> room (KEYS[1] when this is
--            not a member's room record)
-- KEYS[9]    generation: when Redis's data began (see recovery.py), set from
--            ARGV[1] by the first record into an empty Redis
-- KEYS[10]   the guests of the room of the same kind a guest left (KEYS[1] when none)
-- KEYS[11]   that room's change mark (KEYS[1] when none)
-- KEYS[12..] counters: HyperLogLogs the visitor also goes into
-- ARGV[1]    now (the score)
-- ARGV[2]    the member (a pk, or a guest id)
-- ARGV[3]    the TTL of what is written for the visitor (seconds)
-- ARGV[4]    the guest cap (0: none)
-- ARGV[5]    the room ('' for the site)
-- ARGV[6]    the room's kind (its name up to the first ':'; '' for the site)
-- ARGV[7]    the member's card ('' for a guest)
-- ARGV[8]    the guest id a member was until logging in ('' if none)
-- ARGV[9]    '1' with approximate guest counting (the counters only), else ''
-- ARGV[10]   counted since: a visitor scored at or after it is in every counter already
-- ARGV[11]   the window (seconds)
-- ARGV[12]   how many stale guests, or rooms over the cap, one write may drop
-- ARGV[13]   the rooms' cap
-- ARGV[14]   the notices channel
-- ARGV[15]   '1' to keep the card already stored (a socket's record: the page's
--            card says where the member is), else ''
-- ARGV[16]   the room of the same kind a guest left, as their cookie says ('' if none)
-- ARGV[17..] each counter's TTL (KEYS[i] <-> ARGV[i + 5])
-- Returns {the score before (false if none or not kept), 1 if the newcomer was
-- refused (nothing written) else 0, the generation, the room of the same kind
-- the member left (false if none), the rooms dropped from the registry over its
-- cap}. The
-- caller takes the member out of the room left and deletes the dropped rooms'
-- keys (leave_room.lua, drop_rooms.lua): their keys are not known before this
-- runs, and a script touches only the keys it declares.
--
-- ZADD GT, so a server whose clock lags never moves a score backwards. Each key
-- written gets its TTL, so an abandoned namespace disappears. A write that
-- changes what the namespace shows (any member's; a guest's unless they were
-- inside the window already) sets its change mark and publishes the room (see
-- realtime/hub.py). A member is in one room of a kind at a time: recorded in
-- topic:2, they leave topic:1; so does a guest, whose room of the kind Redis
-- does not keep: the caller names it (ARGV[16]) and the guest is taken out of
-- it here. Counting (see counting.py): the visitor goes into the counters
-- unless their score before is at or after ARGV[10]; with approximate guest
-- counting they are all it goes into: no sorted set, so neither a cap nor a
-- refusal (nor a guest to take out of the room left: its HyperLogLogs keep them).
--@include lib/generation.lua
local generation = current_generation(KEYS[9], ARGV[1])
local now, member = ARGV[1], ARGV[2]
local room, kind, card = ARGV[5], ARGV[6], ARGV[7]
local window = tonumber(ARGV[11])
local trim = tonumber(ARGV[12])
local window_ttl = math.ceil(window)
local window_start = tonumber(now) - window
local listed = ARGV[9] ~= '1'
local before = false
if listed then before = redis.call('ZSCORE', KEYS[1], member) end
local keep = tonumber(ARGV[4])
if listed and keep > 0 and not before then
  -- A newcomer to a capped set: room is made only from guests already out of
  -- the window (older than its start), at most trim of them; while the set is
  -- full of guests inside it, the newcomer is refused, so a flood of new
  -- addresses never pushes out the guests already counted.
  local excess = redis.call('ZCARD', KEYS[1]) - keep + 1
  if excess > 0 then
    local stale = redis.call('ZCOUNT', KEYS[1], '-inf', string.format('(%.17g', window_start))
    local n = math.min(excess, stale, trim)
    if n > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1) end
    if n < excess then
      -- A flood. On the site (no room), the peak it raised since the window's
      -- start goes back to the one before (see count_and_raise_peak), and no
      -- peak is taken for a window (flood_until in the peak hash).
      if room == '' then
        local at = tonumber(redis.call('HGET', KEYS[6], 'at') or '0')
        if at >= window_start then
          local kept = redis.call('HMGET', KEYS[6], 'before', 'before_at')
          if kept[1] then
            redis.call('HSET', KEYS[6], 'count', kept[1], 'at', kept[2])
          else
            redis.call('HDEL', KEYS[6], 'count', 'at')
          end
        end
        redis.call('HSET', KEYS[6], 'flood_until', tonumber(now) + window_ttl)
        -- The mark outlives flood_until, also when a count has not renewed it since
        -- an earlier flood's shorter TTL.
        if redis.call('TTL', KEYS[6]) < window_ttl then
          redis.call('EXPIRE', KEYS[6], window_ttl)
        end
      end
      return {false, 1, generation, false, {}}
    end
  end
end
if listed then redis.call('ZADD', KEYS[1], 'GT', now, member) end
if KEYS[2] ~= KEYS[1] then redis.call('ZREM', KEYS[2], member) end
-- Before the rooms' cap: a room recorded with a score older than the others' (a
-- lagging clock) is the one dropped, with its mark.
if card ~= '' or not (before and tonumber(before) >= window_start) then
  redis.call('SET', KEYS[7], now, 'EX', window_ttl)
  redis.call('PUBLISH', ARGV[14], room)
end
local left = false
if room ~= '' and card ~= '' then
  local was_in = redis.call('HGET', KEYS[8], kind)
  if was_in and was_in ~= room then left = was_in end
  redis.call('HSET', KEYS[8], kind, room)
  redis.call('EXPIRE', KEYS[8], ARGV[3])
end
local dropped = {}
if room ~= '' then
  redis.call('ZADD', KEYS[3], now, room)
  redis.call('EXPIRE', KEYS[3], window_ttl)
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[13])
  if over > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[3], math.min(over, trim))
    for i = 1, #popped, 2 do dropped[#dropped + 1] = popped[i] end
  end
end
if card ~= '' then
  redis.call(ARGV[15] == '1' and 'HSETNX' or 'HSET', KEYS[4], member, card)
  redis.call('EXPIRE', KEYS[4], ARGV[3])
end
if ARGV[8] ~= '' then redis.call('ZREM', KEYS[5], ARGV[8]) end
if ARGV[16] ~= '' and redis.call('ZREM', KEYS[10], member) == 1 then
  redis.call('SET', KEYS[11], now, 'EX', window_ttl)
  redis.call('PUBLISH', ARGV[14], ARGV[16])
end
if listed then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
if not (before and tonumber(before) >= tonumber(ARGV[10])) then
  for i = 12, #KEYS do
    redis.call('PFADD', KEYS[i], member)
    redis.call('EXPIRE', KEYS[i], ARGV[i + 5])
  end
end
return {before, 0, generation, left, dropped}
