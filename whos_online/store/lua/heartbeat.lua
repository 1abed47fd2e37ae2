-- A process's heartbeat for its open push connections, in one call: each is alive
-- until ARGV[2] (the beat's time and the timeout its pusher gives).
--
-- KEYS[1]    the cards (kept alive as a record keeps them)
-- KEYS[2]    the rooms' registry
-- then six per connection and namespace: the namespace's live and left sets,
--            the index (see lib/kept.lua) of the member set they are listed in
--            and the other index, the member's connections hash there, and that
--            member set (users or hidden)
-- ARGV[1]    now
-- ARGV[2]    when the connections are alive until: now plus their timeout
-- ARGV[3]    the connections hash's TTL at least (the timeout, whole seconds)
-- ARGV[4]    the sets' TTL (the retention)
-- ARGV[5]    the notices channel
-- then four per connection and namespace: the pk, the connection id, the room
--            ('' for the site), the member's card
-- Returns 1.
--
-- A beat never moves a member's score (see lib/kept.lua), so it never reorders
-- a list. A connection Redis no longer holds (it lost its data) puts its member
-- back into their set, scored now, with their card unless one is stored. A room
-- the cap dropped is left alone: open sockets never bring its keys back. A
-- namespace whose picture changed (a member newly live, or gone stale) is published.
--@include lib/kept.lua
--@include lib/sweep.lua
--@include lib/announce.lua
local now, seen, signs, rooms, changed = ARGV[1], {}, {}, false, {}
redis.call('EXPIRE', KEYS[1], ARGV[4])
for i = 0, (#KEYS - 2) / 6 - 1 do
  local live, left, kept, other = KEYS[3 + 6 * i], KEYS[4 + 6 * i], KEYS[5 + 6 * i], KEYS[6 + 6 * i]
  local conns, set = KEYS[7 + 6 * i], KEYS[8 + 6 * i]
  local pk, conn, room, card = ARGV[6 + 4 * i], ARGV[7 + 4 * i], ARGV[8 + 4 * i], ARGV[9 + 4 * i]
  local registered = room == '' or redis.call('ZSCORE', KEYS[2], room)
  if registered and room ~= '' then
    rooms = true
    redis.call('ZADD', KEYS[2], 'GT', now, room)
  end
  if registered then
    if redis.call('HSET', conns, conn, ARGV[2]) == 1 and not redis.call('ZSCORE', set, pk) then
      changed[room] = true
      redis.call('ZADD', set, now, pk)
      redis.call('HSETNX', KEYS[1], pk, card)
    end
    -- Never shorter: the member's other connections may have longer timeouts.
    if redis.call('TTL', conns) < tonumber(ARGV[3]) then redis.call('EXPIRE', conns, ARGV[3]) end
    if redis.call('ZADD', live, 'GT', ARGV[2], pk) == 1 then changed[room] = true end
    -- At every beat, not only the first: a member forgotten then seen again is
    -- back in their set but not in its index (one ZSCORE when they are in it).
    if not redis.call('ZSCORE', kept, pk) then
      local score = redis.call('ZSCORE', set, pk)
      if score then redis.call('ZADD', kept, score, pk) end
    end
    if not signs[live] then
      signs[live] = {live, left, kept, other}
      if sweep(live, left, now) then changed[room] = true end
    end
    if not seen[set] then
      seen[set] = true
      redis.call('EXPIRE', set, ARGV[4])
    end
  end
end
-- As long as the member set: a stale beat still says "their last sign was a socket".
for _, keys in pairs(signs) do expire_signs(ARGV[4], unpack(keys)) end
if rooms and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('EXPIRE', KEYS[2], ARGV[4]) end
for room in pairs(changed) do announce(room, ARGV[5]) end
return 1
