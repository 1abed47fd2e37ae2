-- count_inside(sets, start, count_guests, kept_users, kept_hidden): a namespace's
-- users, hidden and guests inside the window from start (sets: those three keys;
-- members plus kept_users and kept_hidden, those a socket keeps inside, see
-- kept.lua). With approximate guest counting, the function count_guests() passed
-- in counts the guests instead. Returns users, hidden, guests.
local function count_inside(sets, start, count_guests, kept_users, kept_hidden)
  local users = redis.call('ZCOUNT', sets[1], start, '+inf') + kept_users
  local hidden = redis.call('ZCOUNT', sets[2], start, '+inf') + kept_hidden
  if count_guests then return users, hidden, count_guests() end
  return users, hidden, redis.call('ZCOUNT', sets[3], start, '+inf')
end
-- peak_with(peak, total, guests, cap, now): the site's peak (the hash peak) as it
-- stands with total people online now: the kept one, or total at now if it beats
-- it, unless the guests fill their cap (0: none, as in approximate mode) or
-- record.lua saw a flood within the window (flood_until): such counts say nothing
-- about people. Returns its count and time (false, false: none), and whether total
-- beats the kept one.
local function peak_with(peak, total, guests, cap, now)
  local kept = redis.call('HMGET', peak, 'count', 'at', 'flood_until')
  if total > tonumber(kept[1] or '0') and (cap == 0 or guests < cap)
      and tonumber(kept[3] or '0') < tonumber(now) then
    return total, now, true
  end
  return kept[1] or false, kept[2] or false, false
end
