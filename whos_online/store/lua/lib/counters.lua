-- count(counters, ttls, member): the visitor into each HyperLogLog of counters
-- (counting.py's hour, day and live buckets), each kept its ttl (the ttls, paired
-- by position, from when the visitor changed it: a counter's first visitor made it).
-- The caller skips it for a visitor seen since the counters began.
local function count(counters, ttls, member)
  for i = 1, #counters do
    if redis.call('PFADD', counters[i], member) == 1 then
      redis.call('EXPIRE', counters[i], ttls[i])
    end
  end
end
