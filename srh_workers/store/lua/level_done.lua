-- Branch C is done with step level L of restart R (it finished the step, or ended).
-- When every branch of the restart is done with the level (in the level's set or in the
-- restart's finished set), claim the level's release (SET NX): exactly one caller, and
-- its re-deliveries, then moves every waiting branch on.
-- KEYS: level set, restart finished set, released flag, keys
-- ARGV: branch index C, number of branches of the restart
-- Returns 1 for the caller that holds the release, else 0.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[4], KEYS[1])
for c = 1, tonumber(ARGV[2]) do
  local name = tostring(c)
  if redis.call('SISMEMBER', KEYS[1], name) == 0
      and redis.call('SISMEMBER', KEYS[2], name) == 0 then
    return 0
  end
end
redis.call('SET', KEYS[3], ARGV[1], 'NX')
redis.call('SADD', KEYS[4], KEYS[3])
if redis.call('GET', KEYS[3]) == ARGV[1] then
  return 1
end
return 0
