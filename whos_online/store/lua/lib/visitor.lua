-- see(set, member, now, ttl): the visitor into their sorted set at now, the set
-- kept ttl s. ZADD GT, so a server whose clock lags never moves a score backwards.
local function see(set, member, now, ttl)
  redis.call('ZADD', set, 'GT', now, member)
  redis.call('EXPIRE', set, ttl)
end
