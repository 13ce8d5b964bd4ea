-- SET NX a flag for a claimant; a re-delivered task of the winner wins again.
-- KEYS: flag, keys
-- ARGV: claimant (e.g. the sample index K, or the branch index C)
-- Returns 1 when the claimant holds the flag, else 0.
redis.call('SET', KEYS[1], ARGV[1], 'NX')
redis.call('SADD', KEYS[2], KEYS[1])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
