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
-- peak_with(sets, start, now, total, guests, cap, approximate): the site's peak (the
-- hash sets[4]) as it stands with total people online now: the kept one, or total
-- if it beats it, at the time it was reached: the newest score inside the window
-- (everyone counted was inside it then too), or now with guests counted
-- approximately (they have no score). Not if the guests fill their cap (0: none)
-- or record.lua saw a flood within the window (flood_until): such counts say nothing
-- about people. Returns its count and time (false, false: none), and whether total
-- beats the kept one.
local function peak_with(sets, start, now, total, guests, cap, approximate)
  local kept = redis.call('HMGET', sets[4], 'count', 'at', 'flood_until')
  if total <= tonumber(kept[1] or '0') or (cap > 0 and guests >= cap)
      or tonumber(kept[3] or '0') >= tonumber(now) then
    return kept[1] or false, kept[2] or false, false
  end
  if approximate then return total, now, true end
  local newest = nil
  for i = 1, 3 do
    local row = redis.call('ZRANGE', sets[i], '+inf', start, 'BYSCORE', 'REV', 'LIMIT', 0, 1,
                           'WITHSCORES')
    if row[2] and (not newest or tonumber(row[2]) > newest) then newest = tonumber(row[2]) end
  end
  return total, newest and string.format('%.17g', newest) or now, true
end
