-- Read a slice of the ranked pool in one atomic step.
-- KEYS: rank, cands
-- ARGV: start, stop (ZRANGE indices), complexity digits of a rank member
-- Returns the candidate JSONs, best first.
local skip = tonumber(ARGV[3]) + 1
local records = {}
for i, member in ipairs(redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[2])) do
  records[i] = redis.call('HGET', KEYS[2], string.sub(member, skip))
end
return records
