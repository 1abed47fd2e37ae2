-- Prunes rooms' sorted sets of members scored below ARGV[1] (passing over those
-- a socket keeps, see lib/kept.lua), removing at most ARGV[2] in all, so one
-- call stays short however many rooms and members it is given.
--
-- KEYS[1..]  five per room: its users, hidden and guests, then its live and left
-- ARGV[1]    the score bound
-- ARGV[2]    the most to remove
-- Returns {removed, 1 if it stopped at the limit else 0}.
--@include lib/kept.lua
--@include lib/stale.lua
local removed, budget = 0, tonumber(ARGV[2])
for room = 0, #KEYS / 5 - 1 do
  local live, left = KEYS[5 * room + 4], KEYS[5 * room + 5]
  for i = 1, 3 do
    if budget == 0 then return {removed, 1} end
    local set = KEYS[5 * room + i]
    local pks = stale(set, i < 3 and live or set, i < 3 and left or set, ARGV[1], budget)
    drop(set, pks, set)
    removed, budget = removed + #pks, budget - #pks
  end
end
return {removed, 0}
