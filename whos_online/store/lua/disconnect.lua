-- One WebSocket connection closed. The member stays live at the newest heartbeat
-- of their other living connections (stale ones, of dead processes, are dropped
-- here); with none left they move to the left set at once, and the namespace is
-- marked and published. A room the cap dropped meanwhile is left alone: closing
-- a socket never brings its keys back.
--
-- KEYS[1]    the rooms' registry
-- then four per namespace the connection was in: live, left, the member's
--            connections hash there, the change mark
-- ARGV[1]    now
-- ARGV[2]    now minus the heartbeat timeout
-- ARGV[3]    the left set's and the mark's TTL (the window)
-- ARGV[4]    the member's pk
-- ARGV[5]    the connection id
-- ARGV[6]    the notices channel
-- ARGV[7..]  each namespace's room ('' for the site)
-- Returns 1.
for i = 0, (#KEYS - 1) / 4 - 1 do
  local live, left, conns, mark = KEYS[2 + 4 * i], KEYS[3 + 4 * i], KEYS[4 + 4 * i], KEYS[5 + 4 * i]
  local room = ARGV[7 + i]
  redis.call('HDEL', conns, ARGV[5])
  if room == '' or redis.call('ZSCORE', KEYS[1], room) then
    local newest = nil
    local fields = redis.call('HGETALL', conns)
    for j = 1, #fields, 2 do
      local beat = tonumber(fields[j + 1])
      if beat < tonumber(ARGV[2]) then
        redis.call('HDEL', conns, fields[j])
      elseif newest == nil or beat > newest then
        newest = beat
      end
    end
    if newest then
      redis.call('ZADD', live, newest, ARGV[4])
    else
      redis.call('ZREM', live, ARGV[4])
      redis.call('ZADD', left, ARGV[1], ARGV[4])
      redis.call('ZREMRANGEBYSCORE', left, '-inf', '(' .. (tonumber(ARGV[1]) - tonumber(ARGV[3])))
      redis.call('EXPIRE', left, ARGV[3])
      redis.call('SET', mark, ARGV[1], 'EX', ARGV[3])
      redis.call('PUBLISH', ARGV[6], room)
    end
  end
end
return 1
