-- Prunes rooms' sorted sets of members scored below ARGV[1] (passing over those
-- a socket keeps, see lib/kept.lua), removing at most ARGV[2] in all, so one
-- call stays short however many rooms and members it is given (but for the
-- members a socket keeps in a room, which it reads past).
--
-- KEYS[1..]  seven per room: its users, hidden and guests, then its live and
--            left, then its kept users and kept hidden (see lib/kept.lua)
-- ARGV[1]    the score bound
-- ARGV[2]    the most to remove
-- Returns {removed, 1 if it stopped at the limit else 0}.
--@include lib/kept.lua
--@include lib/stale.lua
local removed, budget = 0, tonumber(ARGV[2])
for room = 0, #KEYS / 7 - 1 do
  local live, left = KEYS[7 * room + 4], KEYS[7 * room + 5]
  for i = 1, 3 do
    local set = KEYS[7 * room + i]
    local kept = i < 3 and KEYS[7 * room + 5 + i] or set
    local from, more = 0, true
    while more do
      if budget == 0 then return {removed, 1} end
      local pks, read
      pks, read, more = stale(set, i < 3 and live or set, i < 3 and left or set, ARGV[1], from,
                              budget)
      drop(set, pks, set, kept)
      removed, budget, from = removed + #pks, budget - #pks, from + read - #pks
    end
  end
end
return {removed, 0}
