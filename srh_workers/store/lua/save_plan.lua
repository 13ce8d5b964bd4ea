-- Keep a step plan (first write wins) and add its spend to the run's totals, atomically.
-- KEYS: plan, keys (registry), requests, spend
-- ARGV: plan JSON, spend JSON (numeric fields to add: tokens, cost, seconds, counts)
-- Every request sent is counted in `requests`; only the kept plan's spend is added, so the
-- totals are the sum of the run's response.jsonl lines.
-- Returns nil when this plan was kept, else the plan stored before it.
redis.call('INCR', KEYS[3])
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SADD', KEYS[2], KEYS[1])
  local stored = redis.call('GET', KEYS[4])
  local totals = stored and cjson.decode(stored) or {}
  for name, value in pairs(cjson.decode(ARGV[2])) do
    totals[name] = (totals[name] or 0) + value
  end
  redis.call('SET', KEYS[4], cjson.encode(totals))
  return false
end
return redis.call('GET', KEYS[1])
