-- Raises the site's peak unless it is as high already: a process writes back the
-- peak it read before Redis lost its data (see recovery.py).
--
-- KEYS[1]  the site's peak hash
-- ARGV[1]  the count
-- ARGV[2]  when (Unix time)
-- ARGV[3]  the peak's TTL
-- Returns 1 if it raised it, else 0.
if tonumber(redis.call('HGET', KEYS[1], 'count') or '0') >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'count', ARGV[1], 'at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
