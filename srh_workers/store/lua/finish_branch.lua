-- Mark branch C of restart R finished (idempotent: a set, not a counter).
-- KEYS: restart finished set, keys, branch state key
-- ARGV: branch index C, branch state JSON ('' leaves the state as it is)
-- Returns the number of finished branches of the restart.
if ARGV[2] ~= '' then
  redis.call('SET', KEYS[3], ARGV[2])
  redis.call('SADD', KEYS[2], KEYS[3])
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], KEYS[1])
return redis.call('SCARD', KEYS[1])
