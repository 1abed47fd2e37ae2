-- Test-only, put before each script's text when the suite runs on a real Redis
-- (tests/conftest.py): the script then fails on any key it touches that is not
-- one of its KEYS, which Redis's scripting contract asks and Redis Cluster relies
-- on, but one Redis server does not check. Redis itself names each command's keys
-- (COMMAND GETKEYS), so no list of commands is kept here.
local redis = (function(server)
  local declared = {}
  for _, key in ipairs(KEYS) do declared[key] = true end
  local function checked(run)
    return function(command, ...)
      local keys = server.pcall('COMMAND', 'GETKEYS', command, ...)
      if not keys.err then  -- an error: a command without keys (PUBLISH)
        for _, key in ipairs(keys) do
          if not declared[key] then error('undeclared key ' .. key .. ' in ' .. command) end
        end
      end
      return run(command, ...)
    end
  end
  return setmetatable({call = checked(server.call), pcall = checked(server.pcall)},
                      {__index = server})
end)(redis)
