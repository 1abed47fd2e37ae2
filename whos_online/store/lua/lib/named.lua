-- named(): the call's KEYS and ARGV by name. ARGV[1] names them in order: the
-- KEYS' names, a '/', then the other ARGV's ("into changed / now member"). A call
-- sends only what it uses (no placeholder for a room or a card it has not); the
-- KEYS and ARGV after the named ones are returned as lists, paired by position.
-- KEYS and ARGV are read through locals: each read of a global costs Redis more.
local function named()
  local keys, args = KEYS, ARGV
  local key_names, arg_names = string.match(args[1], '^(.-) / (.*)$')
  local key, arg, k, a = {}, {}, 0, 1
  for name in string.gmatch(key_names, '%S+') do k = k + 1; key[name] = keys[k] end
  for name in string.gmatch(arg_names, '%S+') do a = a + 1; arg[name] = args[a] end
  local rest_keys, rest_args = {}, {}
  for i = k + 1, #keys do rest_keys[i - k] = keys[i] end
  for i = a + 1, #args do rest_args[i - a] = args[i] end
  return key, arg, rest_keys, rest_args
end
