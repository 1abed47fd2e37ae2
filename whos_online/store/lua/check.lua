-- A hub's sweep of the namespaces its views show, where no process may beat any
-- more: connections of dead processes (alive until before ARGV[1]) move from live
-- to left, and such a namespace's room is published.
--
-- KEYS       four per namespace: live, left, kept users, kept hidden (lib/kept.lua)
-- ARGV[1]    now
-- ARGV[2]    the left set's TTL
-- ARGV[3]    the notices channel
-- ARGV[4..]  each namespace's room ('' for the site)
-- Returns 1.
--@include lib/kept.lua
--@include lib/sweep.lua
--@include lib/announce.lua
for i = 0, #KEYS / 4 - 1 do
  local live, left = KEYS[1 + 4 * i], KEYS[2 + 4 * i]
  if sweep(live, left, ARGV[1]) then
    expire_signs(ARGV[2], live, left, KEYS[3 + 4 * i], KEYS[4 + 4 * i])
    announce(ARGV[4 + i], ARGV[3])
  end
end
return 1
