-- Delete a lock only when the caller holds it.
-- KEYS: lock
-- ARGV: owner
-- Returns 1 when the lock was released, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
