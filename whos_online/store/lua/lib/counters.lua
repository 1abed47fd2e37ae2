-- count(counters, ttls, member): the visitor into each HyperLogLog of counters
-- (counting.py's hour, day and live buckets), each kept its ttl (the ttls, paired
-- by position). The caller skips it for a visitor seen since the counters began.
local function count(counters, ttls, member)
  for i = 1, #counters do
    redis.call('PFADD', counters[i], member)
    redis.call('EXPIRE', counters[i], ttls[i])
  end
end
