-- Store a run's result once: the first finalizer's result is the run's.
-- KEYS: result, meta (hash), active runs (zset), active progress (hash)
-- ARGV: result JSON, status, finished_at, run id
-- Returns 1 when this call stored it, 0 when a result was already there (left as it is).
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  return 0
end
redis.call('HSET', KEYS[2], 'status', ARGV[2], 'finished_at', ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[4])
redis.call('HDEL', KEYS[4], ARGV[4])
return 1
