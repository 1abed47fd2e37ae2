-- A hub's safety check of the namespaces its views show. Connections of dead
-- processes (a heartbeat before ARGV[1]) move from live to left, as a heartbeat
-- would move them where no process beats any more; such a namespace is marked
-- and its room published.
--
-- KEYS       five per namespace: live, left, kept users, kept hidden (see
--            lib/kept.lua), the change mark
-- ARGV[1]    now minus the heartbeat timeout
-- ARGV[2]    now
-- ARGV[3]    the left set's and the mark's TTL
-- ARGV[4]    the notices channel ('': publish nothing)
-- ARGV[5..]  each namespace's room ('' for the site)
-- Returns each namespace's change mark (false if none), so a hub sees a change
-- whose notice it missed.
--@include lib/kept.lua
--@include lib/sweep.lua
--@include lib/announce.lua
local marks = {}
for i = 0, #KEYS / 5 - 1 do
  local live, left, mark = KEYS[1 + 5 * i], KEYS[2 + 5 * i], KEYS[5 + 5 * i]
  if sweep(live, left, ARGV[1]) then
    expire_signs(ARGV[3], live, left, KEYS[3 + 5 * i], KEYS[4 + 5 * i])
    announce(mark, ARGV[5 + i], ARGV[2], ARGV[3], ARGV[4])
  end
  marks[i + 1] = redis.call('GET', mark)
end
return marks
