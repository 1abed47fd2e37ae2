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
-- ARGV[5]   the notices channel ('': publish nothing, the site has no WebSockets)
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
-- refused (nothing written) else 0, the room of the same kind
-- the member left (false if none), the rooms dropped from the registry over its
-- cap}. The caller takes the member out of the room left and deletes the dropped
-- rooms' keys (leave_room.lua, drop_rooms.lua): their keys are not known before
-- this runs, and a script touches only the keys it declares.
--
-- Each key written gets its TTL, so an abandoned namespace disappears. A write
-- that changes what the namespace shows (any member's; a guest's unless they
-- were inside the window already) publishes the room.
--@include lib/admit.lua
--@include lib/flood.lua
--@include lib/visitor.lua
--@include lib/follow_index.lua
--@include lib/announce.lua
--@include lib/member_room.lua
--@include lib/register_room.lua
--@include lib/card.lua
--@include lib/counters.lua
local now, member, ttl, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local cap, trim, room, card, guest, left_room = ARGV[7], ARGV[8], ARGV[9], ARGV[11], ARGV[13],
                                                ARGV[14]
local into = KEYS[1]
local window = tonumber(ARGV[4])
local window_ttl, window_start = math.ceil(window), tonumber(now) - window
local before = false
if ARGV[15] == '1' then
  before = redis.call('ZSCORE', into, member)
  if cap ~= '' and not before
      and not admitted(into, tonumber(cap), tonumber(trim), window_start) then
    if room == '' then mark_flood(KEYS[5], now, window_ttl, window_start) end
    return {false, 1, false, {}}
  end
  see(into, member, now, ttl)
end
if card ~= '' then
  redis.call('ZREM', KEYS[2], member)
  follow_index(KEYS[9], KEYS[10], into, member, now)
  store_card(KEYS[3], member, card, ttl, ARGV[12] == '1')
end
if card ~= '' or not (before and tonumber(before) >= window_start) then
  announce(room, channel)
end
local left, dropped = false, {}
if room ~= '' then
  if card ~= '' then left = enter_room(KEYS[7], room, ttl) end
  dropped = register_room(KEYS[6], room, now, window_ttl, tonumber(ARGV[10]), tonumber(trim))
end
if guest ~= '' then redis.call('ZREM', KEYS[4], guest) end
-- A guest who left a room (rooms of a kind share one window) is out of it at once.
if left_room ~= '' then
  local score = redis.call('ZSCORE', KEYS[8], member)
  redis.call('ZREM', KEYS[8], member)
  if score and tonumber(score) >= window_start then announce(left_room, channel) end
end
local counters = {unpack(KEYS, 11)}
if #counters > 0 and not (before and tonumber(before) >= tonumber(ARGV[6])) then
  count(counters, {unpack(ARGV, 16)}, member)
end
return {before, 0, left, dropped}
