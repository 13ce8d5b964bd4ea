-- Give every key of a run a TTL, or remove it.
-- KEYS: every key of the run
-- ARGV: seconds (0 removes the TTL: PERSIST)
-- Returns how many keys changed.
local changed = 0
for _, key in ipairs(KEYS) do
  if ARGV[1] == '0' then
    changed = changed + redis.call('PERSIST', key)
  else
    changed = changed + redis.call('EXPIRE', key, ARGV[1])
  end
end
return changed
