-- Records a visitor as seen now, in one call (one round trip, also on Cluster).
--
-- KEYS and ARGV by role (lib/named.lua, the roles in this order below): a call
-- sends only those it uses.
-- KEYS:
--   into          the sorted set the visitor goes into (users, hidden or guests);
--                 none with approximate guest counting: the counters are all it
--                 goes into, so neither a cap nor a refusal
--   changed       the namespace's change mark
--   generation    when Redis's data began (see recovery.py), set from now by the
--                 first record into an empty Redis
--   drop_from     a member's other set (listed <-> hidden)
--   cards         member pk -> card (a member's record)
--   guests        the guests, for a member who was the guest ARGV guest until
--                 logging in
--   peak          the site's peak (a capped record on the site: a flood)
--   rooms         the rooms' registry, room -> last visit (a room's record)
--   member_rooms  the member's rooms, kind -> room (a member's room record)
--   left_guests, left_changed: the guests and change mark of the room of the
--                 same kind a guest left (their cookie names it: Redis keeps
--                 no key per guest); they stay in it, scored out of its window
--   kept, kept_from: a member's record: the indexes (lib/kept.lua) of into and
--                 of drop_from
--   then the counters: HyperLogLogs the visitor also goes into
-- ARGV (after ARGV[1], which says which roles the call sends):
--   now, member (a pk or a guest id), ttl (of what is written for the visitor),
--   window (seconds), channel (the notices'): always
--   counted_since (with counters): a visitor scored at or after it is in every
--                 counter already
--   cap, trim     the guest cap, and how many stale guests or rooms over the
--                 cap one write may drop (trim also with a room)
--   stale_before  (with cap) a guest scored before it is stale: out of the
--                 window for longer than a cached read may be shown
--   room, max_rooms: the room and the rooms' cap (a room's record)
--   card, keep_card: a member's card; keep_card '1' keeps one already stored
--   guest, left_room: see KEYS guests and left_guests
--   then each counter's TTL
-- Returns {the score before (false if none or not kept), 1 if the newcomer was
-- refused (nothing written) else 0, the generation, the room of the same kind
-- the member left (false if none), the rooms dropped from the registry over its
-- cap}. The caller takes the member out of the room left and deletes the dropped
-- rooms' keys (leave_room.lua, drop_rooms.lua): their keys are not known before
-- this runs, and a script touches only the keys it declares.
--
-- Each key written gets its TTL, so an abandoned namespace disappears. A write
-- that changes what the namespace shows (any member's; a guest's unless they
-- were inside the window already) sets its change mark and publishes the room.
--@include lib/named.lua
--@include lib/generation.lua
--@include lib/admit.lua
--@include lib/flood.lua
--@include lib/visitor.lua
--@include lib/follow_index.lua
--@include lib/announce.lua
--@include lib/member_room.lua
--@include lib/register_room.lua
--@include lib/card.lua
--@include lib/counters.lua
local key, arg, counters, counter_ttls = named(
  {'into', 'changed', 'generation', 'drop_from', 'cards', 'guests', 'peak', 'rooms',
   'member_rooms', 'left_guests', 'left_changed', 'kept', 'kept_from'},
  {'now', 'member', 'ttl', 'window', 'channel', 'counted_since', 'cap', 'trim', 'room',
   'max_rooms', 'card', 'keep_card', 'guest', 'left_room', 'stale_before'})
local generation = current_generation(key.generation, arg.now)
local now, member, room = arg.now, arg.member, arg.room or ''
local window = tonumber(arg.window)
local window_ttl, window_start = math.ceil(window), tonumber(now) - window
local before = false
if key.into then
  before = redis.call('ZSCORE', key.into, member)
  if arg.cap and not before
      and not admitted(key.into, tonumber(arg.cap), tonumber(arg.trim),
                       tonumber(arg.stale_before)) then
    if key.peak then mark_flood(key.peak, now, window_ttl, window_start) end
    return {false, 1, generation, false, {}}
  end
  see(key.into, member, now, arg.ttl)
end
if key.drop_from then redis.call('ZREM', key.drop_from, member) end
if key.kept then follow_index(key.kept, key.kept_from, key.into, member, now) end
if key.cards or not (before and tonumber(before) >= window_start) then
  announce(key.changed, room, now, window_ttl, arg.channel)
end
local left, dropped = false, {}
if key.member_rooms then left = enter_room(key.member_rooms, room, arg.ttl) end
if key.rooms then
  dropped = register_room(key.rooms, room, now, window_ttl, tonumber(arg.max_rooms),
                          tonumber(arg.trim))
end
if key.cards then store_card(key.cards, member, arg.card, arg.ttl, arg.keep_card) end
if key.guests then redis.call('ZREM', key.guests, arg.guest) end
-- A guest who left a room stays in it scored just out of its window (rooms of a kind
-- share one) until prune: a read taken before they left tells from their score
-- that it counted them, one taken after that it did not (see rendering.blockcache).
if key.left_guests
    and redis.call('ZADD', key.left_guests, 'XX', 'LT', 'CH', string.format('%.17g', window_start),
                   member) == 1 then
  announce(key.left_changed, arg.left_room, now, window_ttl, arg.channel)
end
if #counters > 0 and not (before and tonumber(before) >= tonumber(arg.counted_since)) then
  count(counters, counter_ttls, member)
end
return {before, 0, generation, left, dropped}
