-- Read hash values in the order of a list, atomically.
-- KEYS: order list, then one or more hashes keyed by the list's items
-- ARGV: start, stop (LRANGE indices)
-- Returns, per item, one value from each hash in KEYS order.
local values = {}
for _, field in ipairs(redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])) do
  for i = 2, #KEYS do
    values[#values + 1] = redis.call('HGET', KEYS[i], field)
  end
end
return values
