-- inside(sets, start, buckets): how many of a namespace's users, hidden and guests
-- (sets: those three keys) are inside the window from start by their score (the
-- members a socket keeps inside are not: see kept.lua); with approximate guest
-- counting, the guests of the HyperLogLogs buckets (a list; none: exact).
local function inside(sets, start, buckets)
  local guests = #buckets > 0 and redis.call('PFCOUNT', unpack(buckets))
                 or redis.call('ZCOUNT', sets[3], start, '+inf')
  return {redis.call('ZCOUNT', sets[1], start, '+inf'),
          redis.call('ZCOUNT', sets[2], start, '+inf'), guests}
end
-- peak_with(sets, counted, now, total, guests, cap, approximate): the site's peak
-- (the hash sets[4]) with total online now: the kept one, or total if it beats it,
-- reached at the newest score inside the window (now for approximate guests, who
-- have no score). Not at the guest cap (0: none) nor within a flood (flood_until):
-- such counts say nothing about people. Returns its count and time (false, false:
-- none), and whether total beats the kept one.
local function peak_with(sets, counted, now, total, guests, cap, approximate)
  local kept = redis.call('HMGET', sets[4], 'count', 'at', 'flood_until')
  if total <= tonumber(kept[1] or '0') or (cap > 0 and guests >= cap)
      or tonumber(kept[3] or '0') >= tonumber(now) then
    return kept[1] or false, kept[2] or false, false
  end
  if approximate then return total, now, true end
  local newest = nil
  for i = 1, 3 do
    if counted[i] > 0 then  -- the set's highest score, by rank: no score parsed
      local score = tonumber(redis.call('ZRANGE', sets[i], -1, -1, 'WITHSCORES')[2])
      if not newest or score > newest then newest = score end
    end
  end
  return total, newest and string.format('%.17g', newest) or now, true
end
