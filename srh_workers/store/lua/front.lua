-- The Pareto front: walk the ranked pool, keep each entry whose complexity is
-- strictly lower than that of every entry kept before it (srh_core.ranking).
-- KEYS: rank, cands
-- ARGV: complexity digits of a rank member
-- Returns the front's candidate JSONs, best first.
local width = tonumber(ARGV[1])
local front, lowest = {}, math.huge
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local complexity = tonumber(string.sub(member, 1, width))
  if complexity < lowest then
    lowest = complexity
    front[#front + 1] = redis.call('HGET', KEYS[2], string.sub(member, width + 1))
  end
end
return front
