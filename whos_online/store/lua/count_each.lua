-- The count of each HyperLogLog, in one call: redis-py's Cluster client refuses
-- PFCOUNT in a pipeline, and an EVAL goes to the namespace's master.
--
-- KEYS[1..]  the HyperLogLogs
-- Returns their counts, in order.
local counts = {}
for i, key in ipairs(KEYS) do counts[i] = redis.call('PFCOUNT', key) end
return counts
