-- leave(users, hidden, mark, pk, room, now, ttl, channel): the member pk out of a
-- namespace's member sets users and hidden; if they were listed there, its change
-- mark is set to now (kept ttl s) and its room ('' for the site) published on
-- channel. Returns whether they were listed. The caller passes KEYS only.
local function leave(users, hidden, mark, pk, room, now, ttl, channel)
  if redis.call('ZREM', users, pk) + redis.call('ZREM', hidden, pk) == 0 then return false end
  redis.call('SET', mark, now, 'EX', ttl)
  redis.call('PUBLISH', channel, room)
  return true
end
