-- One push connection closed. The member stays live until the latest their other
-- connections are alive until (those past it, of dead processes, are dropped); with
-- none left they move to the left set (and their set's index, see lib/kept.lua)
-- and the namespace is published. A room the cap dropped is left alone.
--
-- KEYS[1]    the rooms' registry
-- then seven per namespace the connection was in: live, left, kept users,
--            kept hidden, users, hidden, the member's connections hash there
-- ARGV[1]    now
-- ARGV[2]    the left set's TTL (the window)
-- ARGV[3]    the member's pk
-- ARGV[4]    the connection id
-- ARGV[5]    the notices channel
-- ARGV[6..]  each namespace's room ('' for the site)
-- Returns 1.
--@include lib/kept.lua
--@include lib/announce.lua
local pk = ARGV[3]
for i = 0, (#KEYS - 1) / 7 - 1 do
  local live, left, kept_users, kept_hidden = KEYS[2 + 7 * i], KEYS[3 + 7 * i], KEYS[4 + 7 * i],
                                              KEYS[5 + 7 * i]
  local users, hidden, conns = KEYS[6 + 7 * i], KEYS[7 + 7 * i], KEYS[8 + 7 * i]
  local room = ARGV[6 + i]
  redis.call('HDEL', conns, ARGV[4])
  if room == '' or redis.call('ZSCORE', KEYS[1], room) then
    local latest = nil
    local fields = redis.call('HGETALL', conns)
    for j = 1, #fields, 2 do
      local alive_until = tonumber(fields[j + 1])
      if alive_until < tonumber(ARGV[1]) then
        redis.call('HDEL', conns, fields[j])
      elseif latest == nil or alive_until > latest then
        latest = alive_until
      end
    end
    if latest then
      redis.call('ZADD', live, latest, pk)
    else
      redis.call('ZREM', live, pk)
      redis.call('ZADD', left, ARGV[1], pk)
      for _, set in ipairs({{users, kept_users}, {hidden, kept_hidden}}) do
        local score = redis.call('ZSCORE', set[1], pk)
        if score then redis.call('ZADD', set[2], score, pk) end
      end
      expire_signs(ARGV[2], live, left, kept_users, kept_hidden)
      announce(room, ARGV[5])
    end
  end
end
return 1
