-- named(key_roles, arg_roles): the call's KEYS and ARGV by role. ARGV[1] says which
-- roles the call sends, one bit each in the order given, the KEYS' in its low 16 bits
-- and the other ARGV's above: a call sends only what it uses (no placeholder for a
-- room or a card it has not). The KEYS and ARGV after them come back as lists.
local function pick(roles, values, mask, at)
  local picked, i = {}, 1
  while mask > 0 do
    if mask % 2 == 1 then at = at + 1; picked[roles[i]] = values[at]; mask = mask - 1 end
    mask, i = mask / 2, i + 1
  end
  return picked, at
end

local function named(key_roles, arg_roles)
  local keys, args = KEYS, ARGV  -- locals: each read of a global costs Redis more
  local mask = tonumber(args[1])
  local key, k = pick(key_roles, keys, mask % 65536, 0)
  local arg, a = pick(arg_roles, args, (mask - mask % 65536) / 65536, 1)
  local rest_keys, rest_args = {}, {}
  for i = k + 1, #keys do rest_keys[i - k] = keys[i] end
  for i = a + 1, #args do rest_args[i - a] = args[i] end
  return key, arg, rest_keys, rest_args
end
