-- follow_index(kept, kept_from, into, member, now): a member a socket keeps has an
-- entry in their set's index (lib/kept.lua) scored as in the set. A page view
-- moves that score (ZADD XX: only if they are there), and a member who starts or
-- stops hiding takes their entry, with its TTL, into the other set's index.
local function follow_index(kept, kept_from, into, member, now)
  local ttl = kept_from and redis.call('ZSCORE', kept_from, member)
              and redis.call('PTTL', kept_from)
  if ttl then
    redis.call('ZREM', kept_from, member)
    redis.call('ZADD', kept, redis.call('ZSCORE', into, member), member)
    if ttl > 0 then redis.call('PEXPIRE', kept, ttl) end
  else
    redis.call('ZADD', kept, 'XX', 'GT', now, member)
  end
end
